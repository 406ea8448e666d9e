"""What mesh_transformer_main's modes do with code_t5's gin files, beyond mesh-tf's own.

  infer.py       infer_full_line.gin: JSON lines of prefixes in, a completion per line out
  score.py       score.gin: how likely a model finds given completions (both models)
  export.py      export.gin: a SavedModel whose requests are cut to the model's window
  train_eval.py  train_and_eval.gin: training in segments with a full-line eval between them,
                 the best checkpoint kept apart, the rate lowered on a plateau; and the sibling
                 eval of a training in another process
  json_lines.py  the files of infer and score
"""
