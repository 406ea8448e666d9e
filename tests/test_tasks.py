"""The registered seqio Tasks on the fixture dataset: real TFDS data, real vocabulary."""

import collections
import json
import os
import subprocess

import gin
import pytest
import seqio
import tensorflow_datasets as tfds

import code_t5  # noqa: F401  (registers the tasks)
from code_t5 import baselines
from code_t5 import preprocessors
from code_t5 import vocabulary
from code_t5.modes import export
from code_t5.modes import infer
from code_t5.modes import json_lines
from code_t5.modes import score
from code_t5_session import retrieval
from conftest import PYTHON, QUIET_TF


@pytest.fixture
def data_dir_override(flcc_data_dir):
  seqio.set_tfds_data_dir_override(flcc_data_dir)
  yield flcc_data_dir
  seqio.set_tfds_data_dir_override(None)


def _files(data_dir, split):
  ds = tfds.load("flcc/python:1.0.0", split=split, data_dir=data_dir)
  return [e["content"].decode("utf-8") for e in tfds.as_numpy(ds)]


def _decoded(task_name, split, sequence_length):
  task = seqio.get_mixture_or_task(task_name)
  vocab = task.output_features["targets"].vocabulary
  ds = task.get_dataset(sequence_length, split=split, shuffle=False)
  out = []
  for ex in ds.as_numpy_iterator():
    # The prefix LM's inputs end in the EOS that delimits them (code_t5.inputs_delimiter).
    assert ex["inputs"][-1] == vocab.eos_id and ex["targets"][-1] == vocab.eos_id
    out.append((vocab.decode(ex["inputs"][:-1].tolist()),
                vocab.decode(ex["targets"][:-1].tolist())))
  return out


def test_full_line_round_trip_gives_back_the_source(data_dir_override):
  """Untruncated, inputs + targets is a prefix of a file that ends where a line ends."""
  files = _files(data_dir_override, "validation")
  examples = _decoded("flcc_python_full_line", "validation", {"inputs": 4096, "targets": 512})
  assert len(examples) >= len(files)
  for inputs, targets in examples:
    joined = inputs + targets
    source = next((f for f in files if f.startswith(joined)), None)
    assert source is not None, joined[-200:]
    assert source[len(joined):][:1] in ("", "\n", "\r")
    assert targets.strip() and "\n" not in targets


def test_a_line_longer_than_the_targets_is_cut_and_still_ends_with_eos(data_dir_override):
  files = _files(data_dir_override, "validation")
  examples = _decoded("flcc_python_full_line", "validation", {"inputs": 4096, "targets": 6})
  truncated = 0
  for inputs, targets in examples:
    source = next(f for f in files if f.startswith(inputs + targets))
    rest_of_line = source[len(inputs):].split("\n", 1)[0].rstrip("\r")
    assert rest_of_line.startswith(targets)
    truncated += len(targets) < len(rest_of_line)
  assert truncated > 0


def test_full_line_inputs_are_cut_at_a_line_start(data_dir_override):
  files = _files(data_dir_override, "validation")
  for inputs, targets in _decoded("flcc_python_full_line", "validation",
                                  {"inputs": 24, "targets": 8}):
    joined = inputs + targets
    hits = [f for f in files if joined in f]
    assert hits, joined
    at_line_start = any(f.startswith(joined) or f[:f.index(joined)].endswith("\n")
                        for f in hits)
    # Otherwise the window held no line start: the tail of one long line.
    assert at_line_start or "\n" not in inputs[:-1], inputs


def test_full_line_examples_carry_the_text_mesh_tf_eval_compares(data_dir_override):
  """mesh-tf's eval reads targets from "targets_pretokenized". A Task whose examples lack it
  gets no targets: the metrics run on nothing and eval ends in "N padded outputs, 0
  expected" (reproduced with such a Task; it is what the old setup hit)."""
  task = seqio.get_mixture_or_task("flcc_python_full_line")
  vocab = task.output_features["targets"].vocabulary
  ds = task.get_dataset({"inputs": 64, "targets": 16}, split="validation", shuffle=False)
  examples = list(ds.take(20).as_numpy_iterator())
  assert examples
  for ex in examples:
    target = ex["targets_pretokenized"].decode("utf-8")
    assert target and task.postprocess_fn(target, example=ex, is_target=True) == target
    assert vocab.decode(ex["targets"][:-1].tolist()) == target[:len(
        vocab.decode(ex["targets"][:-1].tolist()))]
    assert ex["inputs_pretokenized"].decode("utf-8").endswith(
        vocab.decode(ex["inputs"][:-1].tolist())[-20:])


@pytest.mark.parametrize("eos", [True, False], ids=["prefix LM", "causal"])
def test_the_task_infer_score_export_and_baselines_read_the_same_window(data_dir_override,
                                                                       tmp_path, eos):
  """Training and serving read a prefix through one rule (`preprocessors.inputs_window`, with
  the delimiter `inputs_delimiter` decides): the Task's inputs, infer's and score's input
  datasets, the export's serving vocabulary (+ the EOS mesh-tf appends, which a causal model's
  decoding leaves out) and the baselines' `model_window` agree on every prefix, cut ones
  included."""
  lengths = {"inputs": 24, "targets": 8}
  with gin.unlock_config():
    gin.parse_config(f"import mesh_tensorflow.transformer.utils\n"
                     f"utils.run.sequence_length = {lengths!r}\n"
                     f"code_t5.inputs_delimiter.eos = {eos}")
  try:
    task = seqio.get_mixture_or_task("flcc_python_full_line")
    feature = task.output_features["inputs"]
    vocab = feature.vocabulary
    examples = list(task.get_dataset(lengths, split="validation", shuffle=False)
                    .take(30).as_numpy_iterator())
    prefixes = [ex["inputs_pretokenized"].decode("utf-8") for ex in examples]
    task_inputs = [ex["inputs"].tolist() for ex in examples]
    # (a cursor at the very start of a file: no code before it, nothing but the delimiter)
    assert [ids[-1:] == [vocabulary.EOS_ID] for ids in task_inputs] == [eos] * len(examples)
    assert all(vocabulary.EOS_ID not in ids[:-1] for ids in task_inputs)

    def unpadded(ids):
      ids = list(ids)
      while ids and ids[-1] == vocabulary.PAD_ID:
        ids.pop()
      return ids

    infer_inputs = [unpadded(ex["inputs"]) for ex in infer.prefixes_dataset(
        prefixes, vocab, lengths["inputs"]).as_numpy_iterator()]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"prefix": p, "completion": "x"}) + "\n"
                             for p in prefixes))
    [eval_dataset] = score.completions_dataset_fn(lengths, vocab, "validation",
                                                  input_filename=str(pairs))
    # Score marks the prefix as read, not scored (score.completion_scores).
    score_inputs = [unpadded(ex["inputs"] % score.READ_ONLY) for ex in
                    eval_dataset.dataset_fn().as_numpy_iterator()]
    assert all(i > score.READ_ONLY for ex in eval_dataset.dataset_fn().as_numpy_iterator()
               for i in ex["inputs"] if i)
    assert score_inputs == task_inputs
    serving = export.ServingVocabulary("python")
    # mesh-tf's serving graph appends EOS and cuts to the inputs' length; decoding.served_inputs
    # drops an EOS the model does not read.
    export_inputs = [(serving.encode_tf(p).numpy().tolist() + [vocabulary.EOS_ID])
                     [:lengths["inputs"]] for p in prefixes]
    if not eos:
      export_inputs = [[i for i in ids if i != vocabulary.EOS_ID] for ids in export_inputs]
    assert infer_inputs == task_inputs
    assert export_inputs == task_inputs
    cut = 0
    for prefix, ids in zip(prefixes, task_inputs):
      window = baselines.model_window(prefix, feature, lengths["inputs"])
      assert window == vocab.decode(ids[:-1] if eos else ids)
      assert prefix.endswith(window)
      cut += window != prefix
    assert cut, "no example was long enough to be cut: the test checks nothing"
  finally:
    gin.clear_config()


def _lm_pieces(split, shuffle, passes=1):
  lengths = {"inputs": 24, "targets": 8}
  task = seqio.get_mixture_or_task("flcc_python_lm")
  vocab = task.output_features["targets"].vocabulary
  with gin.unlock_config():
    gin.bind_parameter("code_t5.inputs_delimiter.eos", False)
  try:
    ds = task.get_dataset(lengths, split=split, shuffle=shuffle, num_epochs=passes, seed=3)
    pieces = [(ex["inputs"].tolist(), ex["targets"].tolist()) for ex in ds.as_numpy_iterator()]
  finally:
    gin.clear_config()
  for inputs, targets in pieces:
    # One position short of the row: mesh-tf's ensure_eos would make its last token an EOS.
    assert inputs and targets and len(inputs) <= 24 and len(targets) <= 7
    assert len(inputs) == 24 or len(inputs) + len(targets) < 31, "a short window, not a cut"
  return vocab, pieces


def test_the_causal_lm_task_cuts_each_file_into_consecutive_windows(data_dir_override):
  """Read in order, the windows of flcc_<lang>_lm put back together are the split's files,
  each tokenized and ended by EOS: every token trained on, none twice, none made up."""
  vocab, pieces = _lm_pieces("validation", shuffle=False)
  files = _files(data_dir_override, "validation")
  joined = [token for inputs, targets in pieces for token in inputs + targets]
  assert joined == [t for f in files for t in vocab.encode(f) + [vocabulary.EOS_ID]]
  full = sum(len(i) + len(t) == 31 for i, t in pieces)
  assert full > len(files), "most windows fill the row, less its last position"


def test_t5s_packing_of_the_lm_windows_makes_no_eos_up(data_dir_override):
  """Rows packed as t5's mesh_train_dataset_fn packs them (mesh-tf's pack_or_pad, ensure_eos
  on the features that add EOS) hold one EOS per file: none where a file goes on."""
  from mesh_tensorflow.transformer import dataset as transformer_dataset  # pylint: disable=g-import-not-at-top
  lengths = {"inputs": 24, "targets": 8}
  task = seqio.get_mixture_or_task("flcc_python_lm")
  with gin.unlock_config():
    gin.bind_parameter("code_t5.inputs_delimiter.eos", False)
  try:
    ds = task.get_dataset(lengths, split="validation", shuffle=False)
    ds = ds.map(lambda ex: {k: ex[k] for k in ("inputs", "targets")})
    eos_keys = {k for k, f in task.output_features.items() if f.add_eos}
    rows = list(transformer_dataset.pack_or_pad(
        ds, lengths, pack=True, feature_keys=("inputs", "targets"),
        ensure_eos=eos_keys).as_numpy_iterator())
  finally:
    gin.clear_config()
  assert eos_keys == {"targets"}
  eos = sum(int((row[k] == vocabulary.EOS_ID).sum()) for row in rows for k in ("inputs", "targets"))
  assert eos == len(_files(data_dir_override, "validation"))


def test_training_meets_new_lm_windows_on_every_pass(data_dir_override):
  """A training read cuts each file at new points on every pass; each window is still a
  piece of one file."""
  vocab, pieces = _lm_pieces("train", shuffle=True, passes=2)
  files = [vocab.encode(f) + [vocabulary.EOS_ID] for f in _files(data_dir_override, "train")]
  as_text = [" ".join(map(str, ids)) + " " for ids in files]
  for inputs, targets in pieces[:200]:
    piece = " ".join(map(str, inputs + targets)) + " "
    assert any(piece in text for text in as_text), piece
  counts = collections.Counter(repr(p) for p in pieces)
  per_pass = len(pieces) / 2
  assert len(counts) > 1.5 * per_pass, (len(counts), per_pass)


def test_the_causal_lm_task_needs_a_causal_model(data_dir_override):
  task = seqio.get_mixture_or_task("flcc_python_lm")
  with pytest.raises(ValueError, match="models/causal.gin"):
    task.get_dataset({"inputs": 24, "targets": 8}, split="validation", shuffle=False)


def _cursor_counts(passes, start_step=0, **gin_bindings):
  """How often each full-line example (its inputs and targets) comes up in `passes` shuffled
  passes over the train split, as a training from `start_step` reads it."""
  task = seqio.get_mixture_or_task("flcc_python_full_line")
  with gin.unlock_config():
    for name, value in gin_bindings.items():
      gin.bind_parameter(name, value)
  preprocessors.training_reads_from(start_step)
  try:
    ds = task.get_dataset({"inputs": 512, "targets": 64}, split="train", shuffle=True,
                          num_epochs=passes, seed=3)
    return collections.Counter((e["inputs"].tobytes(), e["targets"].tobytes())
                               for e in ds.as_numpy_iterator())
  finally:
    preprocessors.training_reads_from(0)
    gin.clear_config()


def test_training_meets_new_cursors_on_every_pass(data_dir_override):
  fixed = _cursor_counts(2, **{"code_t5.full_line_options.fresh_train_cursors": False})
  assert set(fixed.values()) == {2}, "fixed cursors: each example once a pass"
  fresh = _cursor_counts(2)
  per_pass = sum(fresh.values()) / 2
  assert per_pass == len(fixed)
  # Two passes of 8 fresh cursors a file: most examples are new in the second.
  assert len(fresh) > 1.5 * per_pass, (len(fresh), per_pass)


def test_a_training_from_another_step_meets_other_cursors(data_dir_override):
  """A resumed training (or train_and_evaluate's next segment) does not meet the first
  pass's cursors again; one from the same step meets the same ones."""
  first = _cursor_counts(1)
  resumed = _cursor_counts(1, start_step=400)
  assert sum(first.values()) == sum(resumed.values())
  assert len(set(first) & set(resumed)) < 0.5 * len(first), "the first pass's cursors again"
  assert _cursor_counts(1, start_step=400) == resumed


def test_estimator_training_reads_from_its_checkpoint_step(tmp_path):
  """upstream/estimator.py: Estimator.train gives the checkpoint's step to the reads it makes."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator import estimator as estimator_lib  # pylint: disable=g-import-not-at-top
  from code_t5.upstream import estimator as estimator_patch  # pylint: disable=g-import-not-at-top
  estimator_patch.install()
  seen = []

  def input_fn():
    seen.append(preprocessors.training_start_step())
    return tf.data.Dataset.from_tensors(({"x": [1.0]}, [0.0])).repeat()

  def model_fn(features, labels, mode):
    weight = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(features["x"] * weight - labels))
    step = tf.compat.v1.train.get_or_create_global_step()
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=step.assign_add(1))

  estimator = estimator_lib.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(input_fn, max_steps=7)
  estimator.train(input_fn, max_steps=9)
  assert seen == [0, 7]
  preprocessors.training_reads_from(0)


def test_validation_examples_are_deterministic(data_dir_override):
  """The same examples in this process and in another one, whose string hashes differ
  (PYTHONHASHSEED): eval's cursors come from each file's sha and the seed, nothing else."""
  lengths = {"inputs": 64, "targets": 16}
  here = _decoded("flcc_python_full_line", "validation", lengths)
  assert here and here == _decoded("flcc_python_full_line", "validation", lengths)
  other = subprocess.run(
      [PYTHON, "-c", "import json, sys, seqio, test_tasks\n"
                     "seqio.set_tfds_data_dir_override(sys.argv[1])\n"
                     "print(json.dumps(test_tasks._decoded('flcc_python_full_line', "
                     f"'validation', {lengths!r})))", data_dir_override],
      capture_output=True, text=True, cwd=os.path.dirname(__file__),
      env=dict(QUIET_TF, TF_CPP_MIN_LOG_LEVEL="3", PYTHONHASHSEED="12345"))
  assert other.returncode == 0, other.stderr[-3000:]
  assert [tuple(e) for e in json.loads(other.stdout.strip().splitlines()[-1])] == here


def test_prefix_lm_continues_its_prefix(data_dir_override):
  files = _files(data_dir_override, "train")
  examples = _decoded("flcc_python_prefix_lm", "train", {"inputs": 64, "targets": 64})
  assert examples
  for inputs, targets in examples:
    assert any((inputs + targets) in f for f in files)


def test_mixture_rates_come_from_gin(data_dir_override):
  mixture = seqio.get_mixture_or_task("flcc_python")
  full_line, prefix_lm = (seqio.get_mixture_or_task(f"flcc_python_{k}")
                          for k in ("full_line", "prefix_lm"))
  causal = seqio.get_mixture_or_task("flcc_python_causal_shared")
  lm, shared_full_line = (seqio.get_mixture_or_task(f"flcc_python_{k}_shared")
                          for k in ("lm", "full_line"))
  assert causal.get_rate(lm) == 4.0 and causal.get_rate(shared_full_line) == 1.0  # defaults
  with gin.unlock_config():
    gin.parse_config("code_t5.mixture_rate.prefix_lm = 0.25\n"
                     "code_t5.mixture_rate.full_line = 0.5\n"
                     "code_t5.mixture_rate.lm = 3.0")
  try:
    assert mixture.get_rate(full_line) == 0.5 and mixture.get_rate(prefix_lm) == 0.25
    # The `_shared` Tasks by their objective too.
    assert causal.get_rate(lm) == 3.0 and causal.get_rate(shared_full_line) == 0.5
  finally:
    gin.clear_config()


def test_missing_vocabulary_is_named(tmp_path):
  seqio.set_tfds_data_dir_override(str(tmp_path))
  try:
    vocab = vocabulary.FlccVocabulary("python")
    with pytest.raises(Exception, match=f"{tmp_path}/flcc_vocab/python/spm.model: no vocabulary"):
      vocab.vocab_size  # pylint: disable=pointless-statement
  finally:
    seqio.set_tfds_data_dir_override(None)


def test_repository_context_reads_the_other_files_of_the_repository_and_split(
    data_dir_override):
  """With repository_context.gin's switch on, a full-line example reads, before its own
  file's text, snippets of the other files of its repository in its split -- never its own
  file, another repository's or another split's -- and the file's text after them is
  unchanged."""
  split_files = tfds.as_numpy(tfds.load("flcc/python:1.0.0", split="validation",
                                        data_dir=data_dir_override))
  split_files = [{k: e[k].decode("utf-8") for k in ("repository", "path", "content")}
                 for e in split_files]
  plain = _decoded("flcc_python_full_line", "validation", {"inputs": 4096, "targets": 512})
  with gin.unlock_config():
    gin.parse_config(["code_t5.repository_context.enabled = True",
                      "code_t5.repository_context.max_tokens = 4096"])
  try:
    with_context = _decoded("flcc_python_full_line", "validation",
                            {"inputs": 4096, "targets": 512})
  finally:
    gin.clear_config()
  assert len(with_context) == len(plain)
  read = 0
  for (inputs, targets), (plain_inputs, plain_targets) in zip(with_context, plain):
    assert targets == plain_targets
    end = f"# {retrieval.END}\n"
    if end not in inputs:
      assert inputs == plain_inputs
      continue
    context, own = inputs.split(end, 1)
    assert own == plain_inputs
    source = next(f for f in split_files if f["content"].startswith(own + targets))
    others = {f["path"]: f["content"] for f in split_files
              if f["repository"] == source["repository"] and f["path"] != source["path"]}
    snippets = context.split("# ")[1:]
    assert snippets
    for snippet in snippets:
      path, text = snippet.split("\n", 1)
      assert path in others and text.rstrip("\n") in others[path], (path, text)
    read += 1
  assert read >= len(plain) // 2


def test_the_file_cache_holds_the_file_before_the_window_and_after_the_line(
    data_dir_override):
  """code_t5.copy_cache.file_tokens: each full-line example's "cache" holds the ids of its file
  before the window the model reads (all of them where they fit, else the last), and with
  after_cursor, in the room left, first the file after the cursor's line; infer makes the
  same features of the same prefixes."""
  files = _files(data_dir_override, "validation")
  task = seqio.get_mixture_or_task("flcc_python_full_line")
  vocab = task.output_features["targets"].vocabulary

  def configured(make, *params):
    with gin.unlock_config():
      gin.parse_config(list(params))
    try:
      return list(make().as_numpy_iterator())
    finally:
      gin.clear_config()

  def examples(*params):
    return configured(lambda: task.get_dataset({"inputs": 48, "targets": 64},
                                               split="validation", shuffle=False), *params)

  def text(ids):
    return vocab.decode([int(i) for i in ids if i])
  whole_file, after_line = ("code_t5.copy_cache.file_tokens = 8192",
                            "code_t5.copy_cache.after_cursor = True")
  whole = examples(whole_file)
  last = examples("code_t5.copy_cache.file_tokens = 8")
  after = examples(whole_file, after_line)
  assert "cache" not in examples()[0]
  assert len(whole) == len(last) == len(after) >= len(files)
  prefixes, rests, cut = [], [], 0
  for whole_one, last_one, after_one in zip(whole, last, after):
    prefix, target = (whole_one["inputs_pretokenized"].decode(),
                      whole_one["targets_pretokenized"].decode())
    window = whole_one["inputs"][:-1].tolist()  # less the delimiter
    before = [int(i) for i in whole_one["cache"] if i]
    assert whole_one["cache"].shape == (8192,)
    assert text(before + window) == prefix
    assert [int(i) for i in last_one["cache"] if i] == before[-8:]
    source = next(f for f in files if f.startswith(prefix + target))
    rest_of_file = "".join(source[len(prefix + target):].split("\n", 1)[1:])
    assert text(after_one["cache"]) == rest_of_file + text(before)
    cut += bool(before)
    prefixes.append(prefix)
    rests.append(rest_of_file)
  assert cut >= len(whole) // 2  # most examples have code before a window of 48
  # Infer's features of the same prefixes (its inputs padded to the window's length).
  inferred = configured(lambda: infer.prefixes_dataset(prefixes, vocab, 48), whole_file)
  inferred_after = configured(lambda: infer.prefixes_dataset(prefixes, vocab, 48, afters=rests),
                              whole_file, after_line)
  for task_one, infer_one, task_after, infer_after in zip(whole, inferred, after, inferred_after):
    assert infer_one["cache"].tolist() == task_one["cache"].tolist()
    assert infer_after["cache"].tolist() == task_after["cache"].tolist()
    assert infer_one["inputs"][:len(task_one["inputs"])].tolist() == task_one["inputs"].tolist()


def test_infer_reads_the_text_after_the_line_only_when_the_cache_does(tmp_path):
  """A record's "after" (the file after the cursor's line) is read with after_cursor, "" where
  a record has none; without it, a record that carries one is an error, as is one that is no
  string."""
  path = tmp_path / "prefixes.jsonl"
  path.write_text('{"prefix": "a = 1\\n"}\n{"prefix": "b", "after": "c = 3\\n"}\n')
  parsed = json_lines.read_json_lines(str(path))
  with pytest.raises(json_lines.PrefixFileError,
                     match=f'{path}: records carry "after", which only a run with'):
    infer.texts_after(str(path), parsed)
  with gin.unlock_config():
    gin.parse_config(["code_t5.copy_cache.file_tokens = 64",
                      "code_t5.copy_cache.after_cursor = True"])
  try:
    assert infer.texts_after(str(path), parsed) == ["", "c = 3\n"]
    path.write_text('{"prefix": "b", "after": 3}\n')
    with pytest.raises(json_lines.PrefixFileError, match=f'{path}:1: "after" must be a string'):
      infer.texts_after(str(path), json_lines.read_json_lines(str(path)))
  finally:
    gin.clear_config()


def test_infer_reads_a_lone_surrogate_of_its_json_lines_as_a_replacement_character(tmp_path):
  """JSON spells a lone surrogate ("\\udce9": json.dumps of a file read with surrogateescape);
  it has no UTF-8 for TensorFlow or the vocabulary, and a session reads it as U+FFFD: so does
  infer, in every string of a record, and the strings around it stay as they were."""
  path = tmp_path / "prefixes.jsonl"
  record = {"prefix": b"# caf\xe9\nx = ".decode("utf-8", "surrogateescape"), "after": "\u00e9",
            "repository": [{"path": "a\udcff.py", "content": "y = 2\n"}], "n": 3}
  path.write_text(json.dumps(record) + "\n")
  assert "\\udce9" in path.read_text()
  [(number, parsed)] = json_lines.read_json_lines(str(path))
  assert (number, parsed) == (1, {"prefix": "# caf\ufffd\nx = ", "after": "\u00e9",
                                  "repository": [{"path": "a\ufffd.py", "content": "y = 2\n"}],
                                  "n": 3})
  assert json_lines.records_of([(number, parsed)], str(path)) == [("# caf\ufffd\nx = ",)]


def test_infer_reads_the_repository_context_as_the_task_does(data_dir_override, tmp_path):
  """A record that carries its repository's other files (in the split's order) gets the
  inputs the Task gives its example, the context and the window both cut to length."""
  lengths = {"inputs": 64, "targets": 16}
  split_files = [{k: e[k].decode("utf-8") for k in ("repository", "path", "content", "sha")}
                 for e in tfds.as_numpy(tfds.load("flcc/python:1.0.0", split="validation",
                                                  data_dir=data_dir_override))]
  with gin.unlock_config():
    gin.parse_config(["code_t5.repository_context.enabled = True",
                      "code_t5.repository_context.max_tokens = 24"])
  try:
    task = seqio.get_mixture_or_task("flcc_python_full_line")
    vocab = task.output_features["inputs"].vocabulary
    examples = list(task.get_dataset(lengths, split="validation", shuffle=False)
                    .as_numpy_iterator())
    records = []
    for ex in examples:
      prefix = ex["inputs_pretokenized"].decode("utf-8")
      source = next(f for f in split_files
                    if f["content"].startswith(prefix + ex["targets_pretokenized"].decode()))
      records.append({"prefix": prefix, "repository": [
          {"path": f["path"], "content": f["content"]} for f in split_files
          if f["repository"] == source["repository"] and f["sha"] != source["sha"]]})
    # The learning bench's records for its line search: the same files, found by the Task's
    # own neighbours and cursors.
    assert baselines.task_repositories(
        "flcc_python_full_line", "validation",
        [(ex["inputs_pretokenized"].decode(), ex["targets_pretokenized"].decode())
         for ex in examples], preprocessors.repository_context()) == [
             ([(f["path"], f["content"]) for f in r["repository"]], "python") for r in records]
    path = tmp_path / "prefixes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    prefixes = [r["prefix"] for r in records]
    contexts = infer.repository_contexts(prefixes, str(path))
    assert sum(bool(c) for c in contexts) >= len(contexts) // 2
    infer_inputs = [ex["inputs"][:len(task_ex["inputs"])].tolist()
                    for ex, task_ex in zip(infer.prefixes_dataset(
                        prefixes, vocab, lengths["inputs"], contexts).as_numpy_iterator(),
                        examples)]
    assert infer_inputs == [ex["inputs"].tolist() for ex in examples]
    assert not any(ex["inputs"][len(task_ex["inputs"]):].any() for ex, task_ex in zip(
        infer.prefixes_dataset(prefixes, vocab, lengths["inputs"], contexts)
        .as_numpy_iterator(), examples))
    # Score and the SavedModel read no context: composing the switch with them is an error.
    with pytest.raises(ValueError, match="score reads no repository context"):
      score.completions_dataset_fn(lengths, vocab, "validation", input_filename=str(path))
    with pytest.raises(ValueError, match="SavedModel export reads no repository context"):
      export.register_serving_task("flcc_python_full_line")
  finally:
    gin.clear_config()
  # Without the switch, files in a record are an error, not quietly unread.
  with pytest.raises(ValueError, match="repository_context.gin"):
    infer.repository_contexts(prefixes, str(path))
