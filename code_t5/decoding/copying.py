"""Completing a line by copying from the code before the cursor, without a model: copy-line
(the rest of the earlier line that starts most like the one being typed) is the baseline a
model must beat; copy-next (what followed the earlier place most like the lines before the
cursor) is line-level induction. Both are evidence for the consensus line (consensus.py), and
`code_t5.baselines` scores copy-line beside a model. The rules are `code_t5_session/lines.py`'s,
which an editor's session runs without TensorFlow."""

import gin

from code_t5_session import lines


copy_similar_line = lines.copy_similar_line


@gin.configurable(module="code_t5")
def copy_next_line(prefix: str, context_lines: int = lines.CONTEXT_LINES,
                   min_similarity: float = lines.MIN_SIMILARITY,
                   max_lines: int = lines.MAX_LINES, at_depth: bool = True) -> str:
  """`code_t5_session/lines.py: copy_next_line`, configured by gin (`consensus.gin` names the
  params that restore the same-line rule, and `at_depth = False` the line at its own
  depth)."""
  return lines.copy_next_line(prefix, context_lines, min_similarity, max_lines, at_depth)
