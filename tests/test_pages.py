"""The pages a newcomer reads hold together: one figure in one place, and pages of a size a
reader can take in.

A measured figure (a score, a lead, a latency, a rate, a size, a share) stands in
BENCHMARKS.md's "Current figures" table, with its machine, date and command, and README.md's
"What to expect" quotes it; every other page, gin file and changelog entry links there or to
the dated log (docs/BENCHMARK_LOG.md, which is history and may hold any figure). A stated bound
is no measurement: it is written as the code's name or in binary units (MiB, GiB), as the code
sets it, or listed in BOUNDS below with its reason.

Everything here reads text: no test launches anything (`test_docs.py` runs the pages' blocks).
"""

import glob
import os
import re
import subprocess
import tomllib

import pytest

from conftest import REPO_ROOT

README = "README.md"
BENCHMARKS = "BENCHMARKS.md"
LOG = "docs/BENCHMARK_LOG.md"
GLOSSARY = "docs/GLOSSARY.md"
# Pages held to "one figure, one place", besides README's and BENCHMARKS' tables.
PAGES = (README, BENCHMARKS, "GENTLE_INTRO.md", "CONTRIBUTING.md", "CHANGELOG.md",
         "docs/REFERENCE.md", GLOSSARY, "gin_configs/mesh/README.md")
MAX_README_LINES = 200
MAX_BENCHMARKS_LINES = 400
MAX_MODES_CELL = 200
MAX_SENTENCE_WORDS = 40

# A measured figure, as the pages write them.
MEASURED = re.compile(r"""(?ix)
  (?<![\w.])\d[\d,]*(?:\.\d+)?\ ?(?:ms|s|min|minutes?|seconds?|hours?|h)\b(?!-)   # a time
 |(?<![\w.])\d+m\d+s\b                                                            # 18m42s
 |(?<![\w.])\d[\d,]*(?:\.\d+)?\ ?(?:steps/s|steps\ a\ second|tokens/s|examples/s|[KMG]B/s)
 |(?<![\w.])\d+(?:\.\d+)?\ ?(?:x|times)\ (?:as\ )?(?:fast|faster|slower|long|longer)\b
 |(?<![\w.])[-+]?\d+(?:\.\d+)?\ points?\b                                         # a lead
 |(?<![\w.])\d{2}\.\d{2}(?![\d.])                                                 # a score
 |(?<![\w.\-+])[-+]\d+\.\d\d(?![\d.])                                             # a lead
 |(?<![\w.])\d[\d,]*(?:\.\d+)?\ ?(?:KB|MB|GB)\b                                   # a size
 |(?<![\w.])\d+(?:\.\d+)?%(?!\ (?:interval|CI|confidence))                        # a share
""")
# Bounds and settings that read like measurements, per page, and why each is not one.
BOUNDS = {
    ("CONTRIBUTING.md", "90 minutes"): "CI's limit on a run",
    ("CONTRIBUTING.md", "30 minutes"): "the suite's budget on the slow class",
    ("BENCHMARKS.md", "30 minutes"): "the suite's budget on the slow class",
}


def read_page(path):
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    return f.read()


def section(text, heading):
  """The body under `## heading` (to the next `## `)."""
  return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def table_rows(text):
  return [line for line in text.splitlines() if line.startswith("| ")][2:]


def _cells(row):
  """A table row's cells; a `|` inside backticks is not a border."""
  cells, cell, code = [], "", False
  for char in row.strip()[1:-1]:
    if char == "`":
      code = not code
    if char == "|" and not code:
      cells.append(cell.strip())
      cell = ""
    else:
      cell += char
  return cells + [cell.strip()]


def _prose(text):
  """(line number, line) outside code: fenced blocks out but `text` ones (sample output is
  what a run printed), inline code blanked."""
  fenced, lines = None, []
  for number, line in enumerate(text.splitlines(), 1):
    if line.startswith("```"):
      fenced = None if fenced is not None else line[3:].strip()
      continue
    if fenced not in (None, "text"):
      continue
    lines.append((number, re.sub(r"`[^`]*`", "``", line)))
  return lines


def measured_figures(path, text):
  """[(line, figure)] of `text` (the file `path`) that are measurements, not bounds."""
  found = []
  for number, line in _prose(text):
    for match in MEASURED.finditer(line):
      if (path, match.group(0)) not in BOUNDS:
        found.append((number, match.group(0)))
  return found


def test_the_figure_pattern_finds_figures_and_leaves_settings_alone():
  figures = ["5.9 ms", "223.8 ms at p50", "+1.82 edit similarity", "32.34 against 24.71",
             "1.64 steps/s", "3.3 GB", "18m42s", "1.7 times as fast", "57% of the time",
             "-0.31 on validation", "2.7 points", "101.4 min", "37 s"]
  settings = ["Adafactor at 0.01", "MIN_SCORE = -2.0", "Python 3.11", "TF 2.15", "4,096 pairs",
              "12.8M positions", "`SMOKE_MINUTES=4`", "64 MiB", "1 GiB", "the 95% interval",
              "88M parameters", "716 validation examples", "mesh-tf 0.1.21", "step^-0.8",
              "--ratios=0.7,0.15,0.15"]
  for text in figures:
    assert measured_figures("x.md", text), text
  for text in settings:
    assert not measured_figures("x.md", text), (text, measured_figures("x.md", text))
  assert measured_figures("x.md", "```text\nloss 0.5 | 3.31 steps/s\n```\n")  # sample output
  assert not measured_figures("x.md", "```sh\nsleep 5 s\n```\n")  # a command


def _held_files():
  """Each page, gin file and gin README, with the lines of its figure tables left out."""
  held = {}
  for path in PAGES + tuple(os.path.relpath(p, REPO_ROOT) for p in sorted(glob.glob(
      os.path.join(REPO_ROOT, "gin_configs", "**", "*.gin"), recursive=True))):
    text = read_page(path)
    if path in (README, BENCHMARKS):
      heading = "What to expect" if path == README else "Current figures"
      rows = set(table_rows(section(text, heading)))
      text = "\n".join("" if line in rows else line for line in text.split("\n"))
    held[path] = text
  return held


def test_no_measured_figure_stands_outside_the_current_table():
  stray = [f"{path}:{number}: {figure}" for path, text in _held_files().items()
           for number, figure in measured_figures(path, text)]
  assert not stray, ("a measured figure outside BENCHMARKS.md's current table and README's "
                     "quote of it: move it to the table (or the log) and link to it", stray)


def test_every_bound_listed_is_still_on_its_page():
  for path, phrase in BOUNDS:
    assert phrase in read_page(path), (path, phrase)


# --- the current table and README's quote of it --------------------------------------------

def _figures_parts():
  """The parts `scripts/figures` runs (its `case` of known parts)."""
  text = read_page("scripts/figures")
  return set(re.search(r"^    ([\w|]+)\) ;;$", text, flags=re.M).group(1).split("|"))


def test_each_current_figure_has_its_machine_date_and_a_command_that_runs_from_a_clone():
  rows = table_rows(section(read_page(BENCHMARKS), "Current figures"))
  assert len(rows) >= 8
  parts = _figures_parts()
  for row in rows:
    what, value, machine, date, command = _cells(row)
    assert what and value and machine, row
    assert re.fullmatch(r"2\d{3}-\d\d-\d\d", date), row
    assert re.fullmatch(r"`[^`]+`", command), row
    words = command.strip("`").split()
    while words and "=" in words[0]:  # VAR=value before the command
      words.pop(0)
    assert words, row
    if words[0] == "scripts/figures":
      assert words[1:] and set(words[1:]) <= parts, (row, parts)
    else:
      assert os.path.exists(os.path.join(REPO_ROOT, words[-1] if words[0] == "bash"
                                         else words[0])), row


def test_the_figures_readme_quotes_are_benchmarks_current_ones():
  """Every number in README's "What to expect" table stands in BENCHMARKS' current table, on
  the row of the same claim (the rows are in the same order)."""
  figure = re.compile(r"\d[\d,]*(?:\.\d+)?")
  readme = table_rows(section(read_page(README), "What to expect"))
  benchmarks = table_rows(section(read_page(BENCHMARKS), "Current figures"))
  assert len(readme) == len(benchmarks)
  for quoted, measured in zip(readme, benchmarks):
    figures = figure.findall(_cells(quoted)[-1])
    assert figures and set(figures) <= set(figure.findall(_cells(measured)[1])), (
        quoted, measured)


# --- the pages' sizes -----------------------------------------------------------------------

def test_readme_is_a_front_door():
  text = read_page(README)
  assert len(text.splitlines()) <= MAX_README_LINES
  modes = table_rows(section(text, "Modes"))
  assert len(modes) >= 10
  header = _cells([line for line in section(text, "Modes").splitlines()
                   if line.startswith("| ")][0])
  assert header == ["gin file", "what it does", "after", "must set", "writes"], header
  for row in modes:
    cells = _cells(row)
    assert len(cells) == len(header), row
    long = [cell for cell in cells if len(cell) > MAX_MODES_CELL]
    assert not long, long
    assert os.path.exists(os.path.join(REPO_ROOT, "gin_configs", cells[0].strip("`"))), row
  prose = " ".join(line for _, line in _prose(text) if not line.startswith(("|", "#", "*")))
  long = [s for s in re.split(r"(?<=[.!?])\s+", prose) if len(s.split()) > MAX_SENTENCE_WORDS]
  assert not long, long


def test_benchmarks_is_a_page_and_cites_only_pictures_the_repository_has():
  text = read_page(BENCHMARKS)
  assert len(text.splitlines()) <= MAX_BENCHMARKS_LINES
  pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text) + [
      path for path in re.findall(r"[\w./<>-]+\.png", text)
      if not path.startswith("runs/") and "<" not in path]
  missing = [p for p in pictures if not os.path.exists(os.path.join(REPO_ROOT, p))]
  assert not missing, missing


def test_gentle_intro_opens_with_a_command():
  text = read_page("GENTLE_INTRO.md")
  assert "```sh" in "\n".join(text.splitlines()[:40])


# --- the log --------------------------------------------------------------------------------

def _anchor(title):
  """GitHub's anchor of a heading: lower case, punctuation dropped, - for a space."""
  return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_the_log_is_dated_newest_first_and_says_what_each_entry_is():
  text = read_page(LOG)
  contents = re.findall(r"^\* (\d{4}-\d\d-\d\d) \[(.+?)\]\(#([^)]+)\): (.+)$",
                        section(text, "Contents"), flags=re.M)
  entries = re.findall(r"^## (.+)\n\n\*(\d{4}-\d\d-\d\d)[^;]*; (.+)\.\*$", text, flags=re.M)
  assert len(entries) >= 60 and [(t, d) for d, t, _, _ in contents] == [
      (t, d) for t, d, _ in entries]
  dates = [d for _, d, _ in entries]
  assert dates == sorted(dates, reverse=True), "newest first"
  titles = {t for t, _, _ in entries}
  for date, title, anchor, status in contents:
    assert anchor == _anchor(title), (title, anchor)
    superseded = re.fullmatch(r"superseded by \[(.+)\]\(#(.+)\)", status)
    assert status == "current" or (superseded and superseded.group(1) in titles
                                   and superseded.group(2) == _anchor(superseded.group(1))
                                   ) or status.startswith("superseded by BENCHMARKS.md"), status


# --- references between pages -------------------------------------------------------------

def _headings(path):
  return {" ".join(h.split()) for h in re.findall(r"^#{2,4} (.+)$", read_page(path), flags=re.M)}


def _tracked(*suffixes):
  names = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
  return [n for n in names if n.endswith(suffixes) and os.path.exists(
      os.path.join(REPO_ROOT, n))]


def test_every_named_section_of_benchmarks_and_the_log_exists():
  """`BENCHMARKS.md, "Title"` and `BENCHMARK_LOG.md, "Title"`, in pages, gin files and code,
  name a heading there (titles may wrap, behind comment marks)."""
  targets = {"BENCHMARKS.md": _headings(BENCHMARKS), "BENCHMARK_LOG.md": _headings(LOG)}
  pattern = re.compile(r"(BENCHMARKS\.md|BENCHMARK_LOG\.md),\s+\"([^\"]+)\"")
  missing = []
  for path in _tracked(".md", ".gin", ".py"):
    if path in (LOG, "tests/test_pages.py"):
      continue
    for page, title in pattern.findall(read_page(path)):
      title = " ".join(word for word in title.split() if word != "#")
      if title not in targets[page]:
        missing.append(f"{path}: {page}, \"{title}\"")
  assert not missing, missing


def test_every_link_to_a_section_of_a_page_finds_it():
  missing = []
  for path in _tracked(".md"):
    text = read_page(path)
    for target, anchor in re.findall(r"\]\(([\w./-]*\.md)?#([\w-]+)\)", text):
      page = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
      if anchor not in {_anchor(h) for h in _headings(page) | {
          h for h in re.findall(r"^# (.+)$", read_page(page), flags=re.M)}}:
        missing.append(f"{path}: {target}#{anchor}")
  assert not missing, missing


# --- the glossary, the reference, the changelog -------------------------------------------

def test_the_glossary_defines_the_words_the_pages_use_and_they_link_to_it():
  headings = {h.lower() for h in _headings(GLOSSARY)}
  for word in ("flcc", "the slow class", "token positions", "copy-line", "copy-next",
               "the copy probe", "the line search", "healing", "the consensus line"):
    assert word in headings, word
  assert "arxiv.org" in section(read_page(GLOSSARY), "The task and the data")  # FLCC's source
  for page in (README, BENCHMARKS, "GENTLE_INTRO.md", "docs/REFERENCE.md"):
    assert "GLOSSARY.md" in read_page(page), page


def test_the_reference_lists_every_option_of_the_data_commands():
  import argparse  # pylint: disable=g-import-not-at-top
  from code_t5.data import __main__ as data_main  # pylint: disable=g-import-not-at-top
  commands = [a for a in data_main.make_parser()._actions  # pylint: disable=protected-access
              if isinstance(a, argparse._SubParsersAction)][0].choices  # pylint: disable=protected-access
  table = table_rows(read_page("docs/REFERENCE.md").split(
      "### Every option of `python -m code_t5.data`", 1)[1].split("\n## ", 1)[0])
  header = ["option", *commands, "default", "what"]
  listed = {}
  for row in table:
    cells = _cells(row)
    assert len(cells) == len(header), row
    listed[cells[0].strip("`")] = {c for c, cell in zip(commands, cells[1:]) if cell == "yes"}
  options = {}
  for name, parser in commands.items():
    for action in parser._actions:  # pylint: disable=protected-access
      if action.option_strings and action.dest != "help":
        options.setdefault(action.option_strings[0], set()).add(name)
  assert listed == options


def test_the_changelog_is_kept_and_its_latest_release_is_the_packages_version():
  text = read_page("CHANGELOG.md")
  sections = re.findall(r"^## (.+)$", text, flags=re.M)
  assert sections[0] == "Unreleased"
  releases = [re.fullmatch(r"(\d+)\.(\d+)\.(\d+) - (\d{4}-\d\d-\d\d)", s) for s in sections[1:]]
  assert releases and all(releases), sections
  assert [r.groups() for r in releases] == sorted((r.groups() for r in releases), reverse=True,
                                                  key=lambda g: tuple(map(int, g[:3])))
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    version = tomllib.load(f)["project"]["version"]
  assert ".".join(releases[0].groups()[:3]) == version
  for section in re.split(r"^## ", text, flags=re.M)[1:]:
    kinds = re.findall(r"^### (.+)$", section, flags=re.M)
    assert set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds
    assert len(kinds) == len(set(kinds)), kinds


@pytest.mark.parametrize("path", ["CONTRIBUTING.md", "docs/REFERENCE.md", README])
def test_no_prose_line_runs_past_what_a_reader_scans(path):
  """Prose wraps; only table rows and commands may run long."""
  long = [n for n, line in _prose(read_page(path)) if len(line) > 300 and not line.startswith("|")]
  assert not long, (path, long)
