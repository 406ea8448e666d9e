"""FLCC v3 repositories made as FLCC made them: from real git history, by real git.

`write_git_repository` plays a history into a fresh git repository (fixed dates, so the
output is reproducible), then lays out what FLCC stores for it: the files of the last commit
as `<name>_<unix time of the commit that last touched them><.ext>`, `paths.json`,
`files.json`, and `METADATA` as `git log --pretty=%ct --name-status --diff-filter=ACDMR`
writes it. The repository's folder is the hash of its first commit, or for a project whose
name was lost, `dev/null/<uuid>` as in the dataset.
"""

import json
import os
import subprocess
from typing import Mapping, Optional, Sequence, Union

from code_t5.data import flcc

# A commit: {path: content} adds or changes files, {path: None} deletes one, and
# {new path: ("rename", old path)} moves one (git records it as R100).
Commit = Mapping[str, Union[bytes, None, tuple]]

GIT_LOG_METADATA = ["log", "--pretty=%ct", "--name-status", "--diff-filter=ACDMR"]
_ENV = {
    "GIT_AUTHOR_NAME": "FLCC fixture", "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "FLCC fixture", "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(work_dir: str, *args: str, date: Optional[int] = None) -> str:
  env = dict(os.environ, **_ENV)
  if date is not None:
    env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{date} +0000"
  return subprocess.run(["git", *args], cwd=work_dir, env=env, check=True,
                        capture_output=True).stdout.decode("utf-8")


def play_history(work_dir: str, commits: Sequence[Commit], first_time: int) -> None:
  """One git commit per entry of `commits`, a minute apart from `first_time` on."""
  os.makedirs(work_dir)
  git(work_dir, "init", "-q", "-b", "main")
  for number, commit in enumerate(commits):
    for path, change in sorted(commit.items()):
      target = os.path.join(work_dir, path)
      if change is None:
        os.remove(target)
        continue
      os.makedirs(os.path.dirname(target), exist_ok=True)
      if isinstance(change, tuple):
        os.rename(os.path.join(work_dir, change[1]), target)
      else:
        with open(target, "wb") as f:
          f.write(change)
    git(work_dir, "add", "-A")
    git(work_dir, "commit", "-q", "-m", f"commit {number}", date=first_time + 60 * number)


def write_git_repository(v3: str, author: str, repo: str, commits: Sequence[Commit],
                         work_dir: str, language: str = "python", first_time: int = 1795370000,
                         lost_name_uuid: Optional[str] = None) -> str:
  """Plays `commits` in `work_dir` and stores the result under `v3` as FLCC does.
  Returns the repository's metadata folder (`v3/repositories/<author>/<repo>/<hash>`)."""
  play_history(work_dir, commits, first_time)
  if lost_name_uuid:
    author, repo, folder = "dev", "null", lost_name_uuid
  else:
    folder = git(work_dir, "rev-list", "--max-parents=0", "HEAD").split()[0]
  lang_dir, extensions = flcc.LANGUAGES[language]
  meta_dir = os.path.join(v3, "repositories", author, repo, folder)
  os.makedirs(meta_dir)
  paths, counts = {}, {}
  for path in git(work_dir, "ls-files", "-z").split("\0"):
    stem, ext = os.path.splitext(os.path.basename(path))
    if ext not in extensions:
      continue
    touched = int(git(work_dir, "log", "-1", "--pretty=%ct", "--", path).strip())
    stored = f"{stem}_{touched}{ext}"
    while stored in paths:  # two files of one name and commit: FLCC takes the next second
      touched += 1
      stored = f"{stem}_{touched}{ext}"
    paths[stored] = path
    counts[f"{lang_dir}/{ext}"] = counts.get(f"{lang_dir}/{ext}", 0) + 1
    stored_dir = os.path.join(v3, "languages", lang_dir, ext, author, repo, folder)
    os.makedirs(stored_dir, exist_ok=True)
    with open(os.path.join(work_dir, path), "rb") as src, \
        open(os.path.join(stored_dir, stored), "wb") as dst:
      dst.write(src.read())
  with open(os.path.join(meta_dir, "paths.json"), "w") as f:
    json.dump(paths, f, indent=1, sort_keys=True)
  with open(os.path.join(meta_dir, "files.json"), "w") as f:
    json.dump(counts, f, sort_keys=True)
  with open(os.path.join(meta_dir, "METADATA"), "wb") as f:
    f.write(git(work_dir, *GIT_LOG_METADATA).encode("utf-8"))
  return meta_dir
