"""How this package wraps an upstream name: once, keeping the original on the wrapper."""


def wrap_once(owner, name: str, make) -> None:
  """`owner.name = make(original)`, unless what is there is already one of ours: installing
  twice changes nothing, and `wrapper.code_t5_wraps` is the original it calls."""
  original = getattr(owner, name)
  if getattr(original, "code_t5_wraps", None) is not None:
    return
  wrapper = make(original)
  wrapper.code_t5_wraps = original
  setattr(owner, name, wrapper)
