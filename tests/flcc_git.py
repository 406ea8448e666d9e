"""FLCC v3 repositories made as FLCC made them: from real git history, by real git.

`write_git_repository` plays a history into a fresh git repository (fixed dates, so the
output is reproducible), then lays out what FLCC stores for it: the files of the last commit
as `<name>_<unix time of the commit that last touched them><.ext>`, `paths.json`,
`files.json`, and `METADATA` as `git log --pretty=%ct --name-status --diff-filter=ACDMR`
writes it. The repository's folder is the hash of its first commit, or for a project whose
name was lost, `dev/null/<uuid>` as in the dataset.
"""

import os
import subprocess
from typing import Mapping, Optional, Sequence, Union

from code_t5.data import repositories
from code_t5.data import tree_writer

# A commit: {path: content} adds or changes files, {path: None} deletes one, and
# {new path: ("rename", old path)} moves one (git records it as R100).
Commit = Mapping[str, Union[bytes, None, tuple]]

GIT_LOG_METADATA = ["log", "--pretty=%ct", "--name-status", "--diff-filter=ACDMR"]  # as FLCC ran it
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
  """Plays `commits` in `work_dir` and stores the result under `v3` as FLCC does, by the
  library's own `--repos_dir` reader (tests/test_repositories.py holds it to git's output).
  Returns the repository's metadata folder (`v3/repositories/<author>/<repo>/<hash>`)."""
  play_history(work_dir, commits, first_time)
  init_hash, metadata, stored = repositories.read_git(
      repositories.Found((repo,), work_dir, True))
  if lost_name_uuid:
    author, repo, init_hash = "dev", "null", lost_name_uuid
  tree_writer.write_repository(v3, author, repo, init_hash, stored, metadata, language)
  return os.path.join(v3, "repositories", author, repo, init_hash)
