"""Several languages in one data dir: Python, Java and JavaScript built from one FLCC tree, in
their real directory spellings (`Python/.py`, `Java/.java`, `JavaScript/.js`), one vocabulary
shared by them, and a mixture naming a language not built. One model trained on the mixture
(code_t5.multilingual_mixture) and evaluated per language is GENTLE_INTRO's multilingual
block, checked by tests/test_docs.py (check_multilingual): run here too, it cost CI half a
minute for the same code path."""


import json
import shutil

import pytest

from code_t5 import vocabulary
from code_t5.data import tree_writer
from code_t5.data import vocab as vocab_lib
from conftest import (FIXTURE_RATIOS, TINY_MODEL, TINY_VOCAB_SIZE, reported, run_data_cli,
                      run_mesh_main, synthetic_module)

# The trainings build on the fixture's data dir: one worker, in order.
pytestmark = pytest.mark.xdist_group("multilingual")

# Tree spellings, as a user would pass them; each maps to ours (python, java, javascript).
LANGUAGES = {"Python": "python", "Java": "java", "JavaScript": "javascript"}
REPOS = ["alice/alpha", "bob/beta", "carol/gamma", "dave/delta", "erin/epsilon", "frank/zeta"]


def synthetic_java(seed: int) -> bytes:
  return f"""package demo;

import java.util.List;

public class Alpha{seed} {{
    private int total = {seed};

    public int add(int x) {{
        if (x > 10) {{
            return x - {seed};
        }}
        return total + x * {seed % 7 + 1};
    }}

\tpublic String name() {{
\t\treturn "größe {seed}";
\t}}
}}
""".encode("utf-8")


def synthetic_javascript(seed: int) -> bytes:
  return f"""const fs = require("fs");

const beta{seed} = (x, y = {seed}) => {{
  let total = x + y * {seed % 5 + 1};
  if (total > 10) {{
    return total - {seed};
  }}
  return [total, "größe"].join(",");
}};

module.exports = {{ beta{seed} }};
""".encode("utf-8")


# As a user passes it, as a --gin_param.
MULTILINGUAL = ["MIXTURE_NAME = @code_t5.multilingual_mixture()"] + TINY_MODEL
CONTENT = {"python": (synthetic_module, ".py"), "java": (synthetic_java, ".java"),
           "javascript": (synthetic_javascript, ".js")}


@pytest.fixture(scope="module")
def three_languages(tmp_path_factory):
  """A data dir with flcc/python, flcc/java and flcc/javascript built; JavaScript has half
  the files of the others, so a balanced sample has to hold the others back."""
  root = tmp_path_factory.mktemp("multilingual")
  tree, data_dir = str(root / "flcc"), str(root / "tfds")
  for spelling, language in LANGUAGES.items():
    make, ext = CONTENT[language]
    files_per_repo = 2 if language == "javascript" else 4
    repos = {f"{repo}-{language}": {f"src/m{i}{ext}": make(r * 10 + i)
                                    for i in range(files_per_repo)}
             for r, repo in enumerate(REPOS)}
    tree_writer.write_flcc_tree(tree, repos, language=language)
    run_data_cli("build", f"--flcc_dir={tree}", f"--data_dir={data_dir}",
                 f"--language={spelling}", f"--ratios={','.join(map(str, FIXTURE_RATIOS))}")
  return data_dir


def test_each_language_is_built_from_its_own_directory(three_languages):
  """One tree holds all three: each dataset has every file of its language and no other's."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from code_t5.data import builder  # pylint: disable=g-import-not-at-top
  for language in LANGUAGES.values():
    built = builder.finished_builder(three_languages, language)
    examples = [e for split in built.info.splits
                for e in tfds.as_numpy(built.as_dataset(split=split))]
    written = len(REPOS) * (2 if language == "javascript" else 4)
    assert len(examples) == written, language
    assert {e["language"].decode() for e in examples} == {language}
    assert all(e["path"].decode().endswith(CONTENT[language][1]) for e in examples)


def test_a_shared_vocabulary_samples_each_language_alike_and_keeps_the_contract(
    three_languages):
  data_dir = three_languages
  run_data_cli("vocab", f"--data_dir={data_dir}", "--language=python",
               f"--vocab_size={TINY_VOCAB_SIZE}")
  proc = run_data_cli("vocab", f"--data_dir={data_dir}", "--languages=Python,Java,JavaScript",
                      f"--vocab_size={TINY_VOCAB_SIZE}")
  with open(vocab_lib.sampling_path(data_dir)) as f:
    record = json.load(f)
  languages = record["languages"]
  assert set(languages) == set(LANGUAGES.values())
  # Each language gave as many characters as the smallest has (JavaScript), in whole files.
  budget = record["chars_per_language"]
  assert budget == min(taken["train_chars"] for taken in languages.values())
  assert languages["javascript"]["sampled_files"] == languages["javascript"]["train_files"]
  for language, taken in languages.items():
    assert budget <= taken["sampled_chars"] <= taken["train_chars"], language
    assert taken["sampled_files"] < taken["train_files"] or language == "javascript", language
  # The same ids and whitespace rules as one language's vocabulary.
  processor = vocabulary.load_processor(vocabulary.vocab_path(data_dir, vocabulary.SHARED))
  assert processor.PieceToId("\n") == 3 and processor.PieceToId("\t") == 4
  for language, (make, _) in CONTENT.items():
    text = make(3).decode("utf-8") + "ü€😀\n"
    assert processor.DecodeIds(processor.EncodeAsIds(text)) == text, language
  # chars/token on validation for each language; Python's own vocabulary beside it.
  for language in LANGUAGES.values():
    line = reported(proc.stdout, language)
    assert "characters per token on validation" in line, proc.stdout
    assert ("its own vocabulary" in line) == (language == "python"), line
  # Rerun: the finished vocabulary is kept.
  again = run_data_cli("vocab", f"--data_dir={data_dir}", "--languages=python,java,javascript")
  assert "vocabulary exists" in again.stdout


def test_a_vocabulary_smaller_than_asked_says_so(three_languages, tmp_path):
  """A language with little data has fewer distinct pieces than asked: sentencepiece stops
  there, and the line that names the vocabulary says so (it said only its size)."""
  data_dir = str(tmp_path / "data")
  shutil.copytree(three_languages, data_dir)
  proc = run_data_cli("vocab", f"--data_dir={data_dir}", "--language=javascript",
                      "--vocab_size=32000")
  size = vocabulary.load_processor(vocabulary.vocab_path(data_dir, "javascript")).GetPieceSize()
  assert size < 32000
  assert f": {size} pieces (32000 asked: the training text holds no more" in proc.stdout, \
      proc.stdout
  proc = run_data_cli("vocab", f"--data_dir={data_dir}", "--language=javascript",
                      f"--vocab_size={size}", "--overwrite")
  assert f": {size} pieces, " in proc.stdout, proc.stdout


def test_a_shared_vocabulary_over_a_language_not_built_is_one_line(three_languages):
  proc = run_data_cli("vocab", f"--data_dir={three_languages}", "--languages=python,go",
                      "--overwrite", check=False)
  assert proc.returncode == 1
  [line] = [line for line in proc.stderr.splitlines() if "error:" in line]
  assert "flcc/go" in line and "not built" in line and "--language=go" in line, line
  # Without --overwrite, an existing shared vocabulary of other languages is named, not reused.
  proc = run_data_cli("vocab", f"--data_dir={three_languages}", "--languages=python,java",
                      check=False)
  assert proc.returncode == 1 and "trained on java, javascript, python" in proc.stderr, \
      proc.stderr
  proc = run_data_cli("vocab", f"--data_dir={three_languages}", "--languages=python",
                      check=False)
  assert proc.returncode == 2 and "two languages or more" in proc.stderr, proc.stderr


def test_balanced_sample_is_seeded_and_whole_files():
  texts = {"a": ["x" * 10] * 10, "b": ["y" * 30, "z" * 5]}
  sample, record = vocab_lib.balanced_sample(texts, seed=1)
  assert record["chars_per_language"] == 35
  assert sample == vocab_lib.balanced_sample(texts, seed=1)[0]
  assert record["languages"]["a"] == {"train_files": 10, "train_chars": 100,
                                      "sampled_files": 4, "sampled_chars": 40}
  assert sorted(sample[-2:]) == ["y" * 30, "z" * 5]


@pytest.fixture(scope="module")
def shared_vocabulary(three_languages):
  run_data_cli("vocab", f"--data_dir={three_languages}", "--languages=python,java,javascript",
               f"--vocab_size={TINY_VOCAB_SIZE}")
  return three_languages


def test_the_causal_multilingual_mixture_mixes_each_languages_causal_tasks(shared_vocabulary):
  """causal = True: the causal LM and full-line Tasks of each language, on the shared
  vocabulary, at flcc_<lang>_causal's rates (4 to 1); by default the prefix LM's."""
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import tasks  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(shared_vocabulary)
  try:
    for causal, objective in ((True, "lm"), (False, "prefix_lm")):
      mixture = seqio.get_mixture_or_task(tasks.multilingual_mixture(
          languages=["java", "JavaScript"], language_rates={"java": 2.0}, causal=causal))
      rates = {task.name: mixture.get_rate(task) for task in mixture.tasks}
      own = 4.0 if causal else 1.0
      assert rates == {f"flcc_java_{objective}_shared": 2.0 * own,
                       "flcc_java_full_line_shared": 2.0,
                       f"flcc_javascript_{objective}_shared": own,
                       "flcc_javascript_full_line_shared": 1.0}, rates
  finally:
    seqio.set_tfds_data_dir_override(None)


@pytest.mark.slow
def test_a_multilingual_mixture_naming_a_language_not_built_is_one_line(shared_vocabulary,
                                                                        tmp_path):
  proc = run_mesh_main(str(tmp_path / "model"), shared_vocabulary,
                       ["models/shared-prefix_lm.gin", "mesh/cpu.gin"],
                       MULTILINGUAL + ["code_t5.multilingual_mixture.languages = ['python', 'Go']",
                                       "run.train_steps = 1"])
  errors = [line for line in proc.stderr.splitlines() if "error:" in line]
  assert proc.returncode == 1 and len(errors) == 1, proc.stderr[-3000:]
  assert "go is not built" in errors[0] and "--language=go" in errors[0], errors[0]
