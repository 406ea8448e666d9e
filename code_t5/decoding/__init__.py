"""Completing the rest of a line from the code before the cursor.

  search.py      greedy decoding (the causal model's) and the line search (beam search of the
                 prefix LM and the causal model), both reading the prefix once; where a line
                 ends, and what a predict_fn adds to PREDICT's outputs
  healing.py     token healing: the prefix's last pieces taken off and written again
  copy_cache.py  what followed the line's last tokens earlier in the window, mixed into each
                 greedy step
  copying.py     completing by copying alone: copy-line (the baseline) and copy-next
  consensus.py   of the line search's lines and the copies, the one that agrees most
"""
