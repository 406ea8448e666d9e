"""code_t5_session: completions at editor speed from an export of `python -m code_t5.session_export`.

NumPy, sentencepiece, onnxruntime and editdistance only (no TensorFlow, no code_t5 import), so
that an editor's process stays small:

  session.py   Session.suggest(prefix): a suggestion per keystroke, the shown one kept while
               the user types along it
  model.py     the model in onnxruntime, the keys and values of what it read kept
  decoding.py  the export's window, token healing and copy cache, on one prefix
  retrieval.py the repository context: the lines of other files that match a prefix (the one
               rule: the full-line Task calls it too)
  lines.py     copy-line, copy-next and the consensus line of several lines, for
               Session(consensus=True) (the one rule: the eval's consensus.gin calls it too)
  graph.py     the ONNX graph of the causal model (what the exporter builds)
"""

from code_t5_session.session import Session, Suggestion  # noqa: F401
