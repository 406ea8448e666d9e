"""The dev trees of Java and JavaScript: a JDK's src.zip as `jar` writes one, npm packages as
`npm pack` writes them, served by a registry on loopback."""

import json
import os
import subprocess
import zipfile

import pytest

from code_t5.data import archive
from code_t5.data import flcc
from code_t5.data import registry_sources

from conftest import JS_CODE as CODE, TINY_VOCAB_SIZE, run_data_cli, write_files


def test_npm_packages_give_their_own_code_and_count_the_rest(npm_registry, tmp_path):
  registry, packages, requests = npm_registry
  left_out = registry_sources.LeftOut()
  repositories = registry_sources.npm_repositories(
      str(tmp_path / "downloads"), registry, tuple(packages.values()), left_out=left_out)
  assert repositories == {
      "npm/left-pad-x": {"index.js": CODE.encode(), "lib/util.js": CODE.replace("add", "sub").encode()},
      "npm/tiny-es": {"src/index.js": b"export const one = 1;\nexport function two() {\n  return 2;\n}\n"},
  }
  assert dict(left_out) == {registry_sources.LEFT_OUT_FOLDER: 2,  # test/, dist/
                            registry_sources.MINIFIED: 2}  # .min.js, the 3,600-character line
  assert {f"/{name}/-/{name}-1.0.0.tgz" for name in packages} <= set(requests)
  asked = len(requests)
  # Again: from the downloads alone, the registry not asked twice.
  again = registry_sources.npm_repositories(str(tmp_path / "downloads"), registry,
                                            tuple(packages.values()))
  assert again == repositories and len(requests) == asked


def test_a_tarball_that_is_not_the_pinned_one_is_refused(npm_registry, tmp_path):
  registry, packages, requests = npm_registry
  name, version, _ = packages["tiny-es"]
  wrong = "sha512-" + "A" * 86 + "=="
  del requests
  with pytest.raises(registry_sources.SourceError,
                     match=r"tiny-es-1.0.0.tgz: its sha512 is not the pinned integrity"):
    registry_sources.npm_repositories(str(tmp_path / "d"), registry, ((name, version, wrong),))


def test_an_unreachable_registry_is_named(tmp_path):
  with pytest.raises(registry_sources.SourceError,
                     match=r"http://127.0.0.1:9/a/-/a-1.0.0.tgz: cannot download .*NPM_CONFIG_REGISTRY"):
    registry_sources.npm_repositories(str(tmp_path), "http://127.0.0.1:9",
                                      (("a", "1.0.0", "sha512-x"),))


def _jdk_src_zip(tmp_path, files):
  """A src.zip as the JDK's own `jar` writes one: module folders of package folders."""
  sources = tmp_path / "jdk-src"
  write_files(sources, files)
  src_zip = tmp_path / "src.zip"
  subprocess.run(["jar", "--create", "--no-manifest", f"--file={src_zip}", "-C", str(sources),
                  "."], check=True)
  return str(src_zip)


# The notice every file of the JDK opens with (its first lines).
GPL_NOTICE = """/*
 * Copyright (c) 1994, 2021, Oracle and/or its affiliates. All rights reserved.
 * DO NOT ALTER OR REMOVE COPYRIGHT NOTICES OR THIS FILE HEADER.
 *
 * This code is free software; you can redistribute it and/or modify it
 * under the terms of the GNU General Public License version 2 only, as
 * published by the Free Software Foundation.
 */
"""


def _java_class(package, name, body="  int x;\n"):
  return f"package {package};\n\npublic class {name} {{\n{body}}}\n"


def test_the_jdk_gives_a_repository_per_module_and_package_group(tmp_path):
  src_zip = _jdk_src_zip(tmp_path, {
      "java.base/module-info.java": "module java.base {\n  exports java.lang;\n}\n",
      "java.base/java/lang/Thing.java": GPL_NOTICE + "\n" + _java_class("java.lang", "Thing"),
      "java.base/java/lang/Documented.java": "/** Not a notice. */\n" + _java_class(
          "java.lang", "Documented"),
      "java.base/java/util/concurrent/atomic/Count.java":
          _java_class("java.util.concurrent.atomic", "Count"),
      "java.base/java/util/concurrent/Pool.java": _java_class("java.util.concurrent", "Pool"),
      "jdk.localedata/sun/util/Table.java": _java_class("sun.util", "Table"),
      "java.base/java/lang/Readme.txt": "not code\n",
  })
  with zipfile.ZipFile(src_zip) as z:  # jar wrote the layout this test means
    assert "java.base/java/lang/Thing.java" in z.namelist()
  left_out = registry_sources.LeftOut()
  repositories = registry_sources.jdk_repositories(str(tmp_path / "downloads"), src_zip,
                                                   left_out=left_out)
  assert {repo: sorted(files) for repo, files in repositories.items()} == {
      "openjdk/java.base": ["java.base/module-info.java"],
      "openjdk/java.base-java.lang": ["java.base/java/lang/Documented.java",
                                      "java.base/java/lang/Thing.java"],
      "openjdk/java.base-java.util.concurrent": [
          "java.base/java/util/concurrent/Pool.java",
          "java.base/java/util/concurrent/atomic/Count.java"],
  }
  assert dict(left_out) == {registry_sources.LEFT_OUT_MODULE: 1,
                            registry_sources.LICENSE_TAKEN_OUT: 1}
  lang = repositories["openjdk/java.base-java.lang"]
  assert lang["java.base/java/lang/Thing.java"] == _java_class("java.lang", "Thing").encode()
  assert lang["java.base/java/lang/Documented.java"].startswith(b"/** Not a notice. */\n")


def test_no_jdk_sources_says_what_to_install(monkeypatch, tmp_path):
  monkeypatch.delenv("JAVA_HOME", raising=False)
  monkeypatch.setattr(registry_sources, "JDK_SRC_ZIP_GLOBS", (str(tmp_path / "*" / "src.zip"),))
  with pytest.raises(registry_sources.SourceError, match="apt-get install openjdk-17-source"):
    registry_sources.jdk_src_zip()
  with pytest.raises(registry_sources.SourceError, match=r"nope.zip: no such file"):
    registry_sources.jdk_src_zip(str(tmp_path / "nope.zip"))


def test_a_hostile_src_zip_is_refused_in_one_line(tmp_path):
  evil = tmp_path / "src.zip"
  with zipfile.ZipFile(evil, "w") as z:
    z.writestr("../outside/Evil.java", "class Evil {}\n")
  with pytest.raises(registry_sources.SourceError, match=r"src.zip: member '../outside/Evil.java' "
                     "would be written outside"):
    registry_sources.jdk_repositories(str(tmp_path / "downloads"), str(evil))
  assert not (tmp_path / "outside").exists()


def test_dev_builds_java_from_a_jdk(tmp_path):
  """`dev --language=java` end to end: the tree, the dataset and its vocabulary, and what it
  left out, printed."""
  files = {"java.base/module-info.java": "module java.base {\n}\n",
           "jdk.charsets/sun/nio/cs/Gen.java": _java_class("sun.nio.cs", "Gen")}
  for number in range(24):
    package = f"java.pkg{number}.sub"
    body = "".join(f"  public int field{i} = {i * number};\n" for i in range(12))
    files[f"java.base/{package.replace('.', '/')}/Class{number}.java"] = _java_class(
        package, f"Class{number}", body)
  src_zip = _jdk_src_zip(tmp_path, files)
  root = tmp_path / "dev"
  out = run_data_cli("dev", "--language=java", f"--jdk_src={src_zip}", f"--root={root}",
                     f"--vocab_size={TINY_VOCAB_SIZE}").stdout
  assert "1 files left out: in a generated or data module" in out
  assert sorted(os.listdir(root / "flcc_java" / "v3" / "languages" / flcc.LANGUAGES["java"][0]
                           / ".java" / "openjdk")) == sorted(
      ["java.base"] + [f"java.base-java.pkg{n}.sub" for n in range(24)])
  assert (root / "tfds" / "flcc_vocab" / "java" / "spm.model").exists()
  report = json.loads((root / "tfds" / "flcc" / "java" / "1.0.0" / "flcc_report.json").read_text())
  assert sum(split["files"] for split in report["splits"].values()) == 25


def test_unpack_limits_bound_a_package(monkeypatch, npm_registry, tmp_path):
  registry, packages, requests = npm_registry
  monkeypatch.setattr(registry_sources, "UNPACK_LIMITS",
                      archive.Limits(max_member_bytes=100, max_extracted_bytes=1 << 20))
  del requests
  with pytest.raises(registry_sources.SourceError, match=r"unpacks to more than 100 bytes"):
    registry_sources.npm_repositories(str(tmp_path / "d"), registry, (packages["left-pad-x"],))


def test_a_repository_gives_at_most_its_cap_taken_evenly(monkeypatch):
  monkeypatch.setattr(registry_sources, "MAX_FILES_PER_REPOSITORY", 3)
  left_out = registry_sources.LeftOut()
  contents = {f"lib/{name}.js": name.encode() for name in "abcdefg"}
  assert registry_sources.evenly(contents, left_out) == {
      "lib/a.js": b"a", "lib/c.js": b"c", "lib/e.js": b"e"}
  assert dict(left_out) == {registry_sources.OVER_REPOSITORY_CAP: 4}
  assert registry_sources.evenly({"x.js": b"x"}, left_out) == {"x.js": b"x"}
