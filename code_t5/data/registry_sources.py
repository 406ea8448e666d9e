"""Dev trees of Java and JavaScript from the package registries alone.

Python's dev tree is the interpreter's own standard library; the other languages' come from
what Debian and npm publish, as their users install it:

  java        a JDK's own sources, `lib/src.zip` of Debian's `openjdk-17-source` (or
              $JAVA_HOME's, or --jdk_src): its modules' code, one "repository" per package
              group (`openjdk/java.base-java.util.concurrent`), about 300, each file without
              the license notice it opens with.
  javascript  npm packages, each pinned by version and integrity (NPM_PACKAGES), one
              repository each of at most MAX_FILES_PER_REPOSITORY files: hand-written code,
              not what a bundler or minifier wrote.

Both are data from strangers as much as any archive: they are unpacked by `archive.extract`
(regular files only, within its Limits, links left out), read within MAX_SOURCE_BYTES a file,
and what is left out is counted by reason (`LeftOut`) and printed by `dev`.
"""

import base64
import collections
import glob
import hashlib
import os
from typing import Counter, Dict, Iterator, Optional, Tuple

from code_t5.data import archive

# A file over this is data or generated, not code a user writes; also each read's memory bound.
MAX_SOURCE_BYTES = 1 << 20
# What a minifier or generator writes: a line this long, or lines this long on average.
MAX_LINE_CHARS = 1000
MAX_MEAN_LINE_CHARS = 120
# The most files one repository gives, taken evenly over its files in path order: a package
# of a thousand one-function modules (lodash, core-js) would otherwise be most of a split's
# files, and so most of the examples a bench scores (eight a file). No package group of the
# JDK comes near it.
MAX_FILES_PER_REPOSITORY = 300
# What one package or JDK may unpack to (archive.Limits): the JDK's src.zip is 50 MB packed,
# about 250 MB unpacked; the largest pinned npm package about 30 MB.
UNPACK_LIMITS = archive.Limits(max_member_bytes=64 << 20, max_extracted_bytes=1 << 30)

# What became of a file of the right extension, where it was not kept as it is (counted,
# printed by `dev`).
TOO_LARGE = "left out: over MAX_SOURCE_BYTES"
MINIFIED = "left out: minified or generated (long lines)"
LEFT_OUT_FOLDER = "left out: in a test, build or data folder"
LEFT_OUT_MODULE = "left out: in a generated or data module"
LICENSE_TAKEN_OUT = "kept without their leading license notice"
OVER_REPOSITORY_CAP = "left out: over MAX_FILES_PER_REPOSITORY in their repository"
LINK = "left out: links"

LeftOut = Counter  # reason -> files


class SourceError(Exception):
  """A dev source cannot be found or fetched; the message says what to install or pass."""


# ---- Java: the JDK's sources --------------------------------------------------------------

JDK_SOURCE_PACKAGE = "openjdk-17-source"  # Debian's: /usr/lib/jvm/openjdk-17/lib/src.zip
JDK_SRC_ZIP_GLOBS = ("/usr/lib/jvm/openjdk-17/lib/src.zip", "/usr/lib/jvm/*/lib/src.zip")
# Modules that are generated (charsets, vector, localedata's tables), a debugger's agent, or
# one library as large as the rest together (java.desktop: AWT and Swing; java.xml: Xerces and
# Xalan), which would make one split's share of the code.
JDK_LEFT_OUT_MODULES = frozenset({
    "jdk.localedata", "jdk.charsets", "jdk.incubator.vector", "jdk.incubator.foreign",
    "jdk.hotspot.agent", "jdk.internal.vm.ci", "java.desktop", "java.xml", "jdk.accessibility",
    "jdk.unsupported.desktop", "jdk.jconsole"})
# Every file of the JDK opens with the same 24-line GPL notice: thousands of copies of one
# text, which a model learns by heart and a bench then scores as code (a tenth of the
# examples). The leading block comment is taken out where it is that notice.
JDK_LICENSE_WORDS = "GNU General Public License"
# A package group is the package's first three names (java.util.concurrent, sun.nio.ch,
# com.sun.tools): java.util alone would be a tenth of the tree.
JDK_PACKAGE_DEPTH = 3


def jdk_src_zip(jdk_src: Optional[str] = None) -> str:
  """--jdk_src, else $JAVA_HOME/lib/src.zip, else the first of JDK_SRC_ZIP_GLOBS (Debian's
  openjdk-17-source first): the path of a JDK's src.zip."""
  if jdk_src:
    if not os.path.isfile(jdk_src):
      raise SourceError(f"{jdk_src}: no such file (--jdk_src names a JDK's lib/src.zip)")
    return jdk_src
  candidates = []
  if os.environ.get("JAVA_HOME"):
    candidates.append(os.path.join(os.environ["JAVA_HOME"], "lib", "src.zip"))
  for pattern in JDK_SRC_ZIP_GLOBS:
    candidates.extend(sorted(glob.glob(pattern)))
  for path in candidates:
    if os.path.isfile(path):  # (a JDK without its source package has a dangling link)
      return path
  raise SourceError(f"no JDK sources (lib/src.zip) in $JAVA_HOME or /usr/lib/jvm: install "
                    f"Debian's {JDK_SOURCE_PACKAGE} (apt-get install {JDK_SOURCE_PACKAGE}) "
                    "or pass --jdk_src=<a JDK's lib/src.zip>")


def jdk_repositories(downloads: str, jdk_src: Optional[str] = None,
                     max_files: Optional[int] = None,
                     left_out: Optional[LeftOut] = None) -> Dict[str, Dict[str, bytes]]:
  """The .java files of a JDK's src.zip (`jdk_src_zip`), unpacked under `downloads`: one
  repository per module and package group (`openjdk/<module>-<group>`), the modules of
  JDK_LEFT_OUT_MODULES left out."""
  left_out = collections.Counter() if left_out is None else left_out
  unpacked = unpack_once(jdk_src_zip(jdk_src), downloads)
  found: Dict[str, Dict[str, bytes]] = {}
  for module in sorted(os.listdir(unpacked)):
    if not os.path.isdir(os.path.join(unpacked, module)):
      continue
    if module in JDK_LEFT_OUT_MODULES:
      left_out[LEFT_OUT_MODULE] += _count(os.path.join(unpacked, module), ".java")
      continue
    for path, content in source_files(os.path.join(unpacked, module), ".java", left_out):
      content = without_license_notice(content, JDK_LICENSE_WORDS, left_out)
      group = ".".join(path.split("/")[:-1][:JDK_PACKAGE_DEPTH])
      repository = f"openjdk/{module}-{group}" if group else f"openjdk/{module}"
      found.setdefault(repository, {})[f"{module}/{path}"] = content
  repositories: Dict[str, Dict[str, bytes]] = {}
  taken = 0
  for repository, contents in found.items():
    for path, content in evenly(contents, left_out).items():
      repositories.setdefault(repository, {})[path] = content
      taken += 1
      if max_files is not None and taken >= max_files:
        return repositories
  return repositories


# ---- JavaScript: npm packages -------------------------------------------------------------

NPM_REGISTRY = "https://registry.npmjs.org"
# (name, version, the registry's integrity of its tarball), as `npm view NAME@VERSION
# dist.integrity` prints it. Packages whose own code ships unbundled, of many authors and
# styles (CommonJS and ES modules, classes and prototypes, tabs and two and four spaces).
NPM_PACKAGES: Tuple[Tuple[str, str, str], ...] = (
    ("express", "5.3.0",
     "sha512-qCqy1xSoaugxOD4IVHb1ZWdkvCF2W3aE2okKouWj8VwJ+ztskSiXoBnCSJqfKT+cVPJhuJqe9YLbY425+Zh00g=="),
    ("koa", "3.3.0",
     "sha512-NdsWJYxVzUuYt718DtEQRhUXqqsAPA4VlaUGrlidjh/T2TP/4OQXqQg4ouUHfHD9f+tgmwLZWPm+JQLgqM9YbA=="),
    ("webpack", "5.113.0",
     "sha512-q54iF0LNaAAdLEt3al9qMXC2zARvcx7LVKjHp+ExjCRkGx0M8TmawGHAXykXwofWzxhNzPTAh3kLVXvNg0El4A=="),
    ("eslint", "10.16.0",
     "sha512-Xu3PRLG/wCaZWZ20gkExUcNqL2mWWsXTR+Lln3Sof4Y9WuA678fH9hrlQ8B6UNwbTnsKdDdBYOd2jxtycXVTGQ=="),
    ("mocha", "12.0.3",
     "sha512-beammieDdiWdkjANWeWPpkxUROYGi5FN88fPOkLiticz7HTg3Y+Pho3EYE6SUdcuWnZ3h2WD8EXCA55JF4o6wg=="),
    ("chai", "6.3.0",
     "sha512-XWAtwJ6OHO+tj0EKCs0Y2UamnyOxseZWltU4x2U2wh8g4AigdjwvtUjvLP2tqkA/avxHEtzxNaqGq/YGNwckKg=="),
    ("jquery", "4.1.0",
     "sha512-tnN2N83S+xD3yhmdBP4nnJ1XOO0Fl586rG23FA5h/JAe8XN3W9a1zGwDMltBptn+UpcqEKicnO61+jQ0EiF2fw=="),
    ("three", "0.187.0",
     "sha512-Qiu7R+Cmh8CstZsY1uJOSWnVlfo7ZtNLV7mF8Jltk3LB3AtDu9cRZlcnRKkAk8Y4z6KKw35z7Y7Urd7jWY8etA=="),
    ("ramda", "0.32.0",
     "sha512-GQWAHhxhxWBWA8oIBr1XahFVjQ9Fic6MK9ikijfd4TZHfE2+urfk+irVlR5VOn48uwMgM+loRRBJd6Yjsbc0zQ=="),
    ("lodash", "4.18.1",
     "sha512-dMInicTPVE8d1e5otfwmmjlxkZoUpiVLwyeTdUsi/Caj/gfzzblBcCE5sRHV/AsjuCmxWrte2TNGSYuCeCq+0Q=="),
    ("underscore", "1.13.8",
     "sha512-DXtD3ZtEQzc7M8m4cXotyHR+FAS18C64asBYY5vqZexfYryNNnDc02W4hKg3rdQuqOYas1jkseX0+nZXjTXnvQ=="),
    ("moment", "2.31.0",
     "sha512-0acOTfMiWOheYS4eoWb80yYMb/JLvVv9SHbs2PehaDzfUG0Bw855SKyk0IKTnPGa5+U2bmi3W68l1+sGLX/pvw=="),
    ("luxon", "3.7.2",
     "sha512-vtEhXh/gNjI9Yg1u4jX/0YVPMvxzHuGgCm6tC5kZyb08yjGWGnqAjGJvcXbqQR2P3MyMEFnRbpcdFS6PBcLqew=="),
    ("terser", "5.51.4",
     "sha512-VPi1CkDvCWLGUVIToctNBG+NdHbSXwOPjHJnQ3pdB0XknaldnI76wSkAFOGxV2ZdkzOP5d6gpQ5c58XvDghRvw=="),
    ("uglify-js", "3.19.3",
     "sha512-v3Xu+yuwBXisp6QYTcH4UbH+xYJXqnq2m/LtQVWKWzYc1iehYnLixoQDN9FH6/j9/oybfd6W9Ghwkl8+UMKTKQ=="),
    ("less", "4.9.1",
     "sha512-orp15PfJvvNDIqJdVWzMI9Sjpjp3VTiw3sfvbB+67LlISTEn8uVT2EdYSuyl02BLvaftv6sdk9Umnxmm5rckmg=="),
    ("handlebars", "4.7.10",
     "sha512-P5VJMVM7qgBn6vjXMw8WG9uVI+ncf2pi72j4de4yz5ZULLj2RGqLYaKOYGsgyrViQ0tePOVlN1tDCCXXtFqXKg=="),
    ("marked", "18.3.0",
     "sha512-ed8zmPXlBb3UfGXN5iHMQyMhFpdqLgoV5umUXx/Q1R+FW3q8VpqpyoKUwlENL9appo2UMvNLURDVaT3AMOryGA=="),
    ("ws", "8.23.1",
     "sha512-1rzWDSN0NOi3tpwgHsQExjWRoKUGtjCkJ2gZRaaRtzhYLboMytOI9pj9PU7yCgY37auqdd4OyLofZDbkeuZmPA=="),
    ("request", "2.88.2",
     "sha512-MsvtOrfG9ZcrOwAW+Qi+F6HbD0CWXEh9ou77uOb7FM2WPhwT7smM833PzanhJLsgXjN89Ir6V2PczXNnMpwKhw=="),
    ("bluebird", "3.7.2",
     "sha512-XpNj6GDQzdfW+r2Wnn7xiSAd7TM3jzkxGXBGTtWKuSXv1xUV+azxAm8jdWZN06QTQk+2N2XB9jRDkvbmQmcRtg=="),
    ("q", "2.0.3",
     "sha512-gv6vLGcmAOg96/fgo3d9tvA4dJNZL3fMyBqVRrGxQ+Q/o4k9QzbJ3NQF9cOO/71wRodoXhaPgphvMFU68qVAJQ=="),
    ("core-js", "3.51.0",
     "sha512-7bDKx/5jm5MxzsXxc93g6Z2+4ZsuT/MddrfRmTDJNAkWsYWHU8EVNEsBiIEWnMAMCHMmRfUEjkuo3jeNBOIHRw=="),
    ("jsdom", "31.0.1",
     "sha512-CbhJL8ZQg3eKswxSZth4QO9tW0jPIhmR0vtSXQSbKSfWbwIT6hoRc17wdHIVTQ43KI0mdV5iTJr3281IDgVZ5g=="),
    ("postcss", "8.5.34",
     "sha512-P1Qzj0XXZjMda74C7qiVnBG90UKNbyNUAOeQRBW8X63RsIMV57gevRqjnkELdwtZ/S2/uQFksJhmwuN8xShLPw=="),
    ("leaflet", "1.9.4",
     "sha512-nxS1ynzJOmOlHp+iL3FyWqK89GtNL8U8rvlMOsQdTTssxZwCXh8N2NB3GDQOL+YR3XnWyZAxwQixURb+FA74PA=="),
    ("ol", "10.11.0",
     "sha512-OJ+lrx7kx/1O7Xx18Ff9QkVnwZIEL0OuhJQSy2sYgzzDvyZ2qHvuZEGAajbSstUyBwaS1OtQ4RWnY84tRMDdqg=="),
    ("phaser", "4.2.1",
     "sha512-WUNwCPJpdjvZiuT6SgCfYVW8Qw/3j0jJ4ws7P2QkhFLFu74sbGuyHJcbFueGkY/AYO4Pi47bNQXn1OCJeLX//w=="),
    ("node-forge", "1.4.4",
     "sha512-T6VRRpF3+czIGcXW/LOeoD7Ej28d8CF1UMEAbJyJRUtYMvyXAgxUPW2kbUibumvV9LiUQAznJOFyeYclzSJMMg=="),
    ("crypto-js", "4.2.0",
     "sha512-KALDyEYgpY+Rlob/iriUtjV6d5Eq+Y191A5g4UqLAi8CyGP9N1+FdVbkc1SxKc2r4YAYqG8JzO2KGL+AizD70Q=="),
    ("validator", "13.15.35",
     "sha512-TQ5pAGhd5whStmqWvYF4OjQROlmv9SMFVt37qoCBdqRffuuklWYQlCNnEs2ZaIBD1kZRNnikiZOS1eqgkar0iw=="),
    ("joi", "18.3.2",
     "sha512-iUivApKYw5GpZmq2Sy6El99j7noo8QSUFZlyQtr3HCkosC/b5wKF6/Y3teiHIlaM8WI38sAT3P+51rB0lhAhJA=="),
    ("fastify", "5.12.8",
     "sha512-moP8exb2sCHLUbJkwp+I6C0padhy4D8lp0SdmzY7HhSdZuqm7O/u3o2aq7u8okaQ//33QDzj3G/u+FsSdB8Qzw=="),
    ("pino", "10.4.0",
     "sha512-bk1ZMTwG/Vymx+zPoa28MhNzucFvXJWp3csrSuxuHPSMeUettaCoQ5Jvg07mtC4JGNpcfTwz41oVCnNgBK9+vA=="),
    ("winston", "3.19.0",
     "sha512-LZNJgPzfKR+/J3cHkxcpHKpKKvGfDZVPS4hfJCc4cCG0CgYzvlD6yE/S3CIL/Yt91ak327YCpiF/0MyeZHEHKA=="),
    ("nunjucks", "3.2.4",
     "sha512-26XRV6BhkgK0VOxfbU5cQI+ICFUtMLixv1noZn1tGU38kQH5A5nmmbk/O45xdyBhD1esk47nKrY0mvQpZIhRjQ=="),
    ("stylus", "0.64.0",
     "sha512-ZIdT8eUv8tegmqy1tTIdJv9We2DumkNZFdCF5mz/Kpq3OcTaxSuCAYZge6HKK2CmNC02G1eJig2RV7XTw5hQrA=="),
    ("clean-css", "5.3.3",
     "sha512-D5J+kHaVb/wKSFcyyV75uCn8fiY4sV38XJoe4CUyGQ+mOU/fMVYUdH1hJC+CJQ5uY3EnW27SbJYS4X8BiLrAFg=="),
    ("svgo", "4.1.0",
     "sha512-bkxnTg1kSU0guhIBmibA6UUhrQmPVA1XsQLN+ylCd+UWzbnLkySOcXpyk1mrl05f+pcaCx2eHb+sp6BgMZWX+Q=="),
    ("jshint", "2.13.6",
     "sha512-IVdB4G0NTTeQZrBoM8C5JFVLjV2KtZ9APgybDA1MK73xb09qFs0jCXyQLnCOp1cSZZZbvhq/6mfXHUTaDkffuQ=="),
    ("escodegen", "2.1.0",
     "sha512-2NlIDTwUWJN0mRPQOdtQBzbUHvdGY2P1VXSyU83Q3xKxM7WHX2Ql8dKq782Q9TgQUNOLEzEYu9bzLNj1q88I5w=="),
    ("estraverse", "5.3.0",
     "sha512-MMdARuVEQziNTeJD8DgMqmhwR11BRQ/cBP+pLtYdSTnf3MIO8fFeiINEbX36ZdNlfU/7A9f3gUw49B3oQsvwBA=="),
    ("recast", "0.24.0",
     "sha512-dN08tw9Kl2i8oDBy16NhxBh6qOqsEqmGYpX1xaxPmgz6/6ukopSuysLfvLbieuDMY57jEz6eTmNz6lqH54kuqQ=="),
    ("preact", "11.2.0",
     "sha512-/HfHI/7N84e6GrWBJ3J280z3mLaRJiDcSvj/A+y/4AbLnND/1UlGHe1sR6oYuTGwId0nP7dqDU9OnLxMPZ7xBg=="),
    ("backbone", "1.6.1",
     "sha512-YQzWxOrIgL6BoFnZjThVN99smKYhyEXXFyJJ2lsF1wJLyo4t+QjmkLrH8/fN22FZ4ykF70Xq7PgTugJVR4zS9Q=="),
    ("mithril", "2.3.8",
     "sha512-za/Yo7qXEckjm5syrSfaaI9Utf4tCUT3T1IOIYqH6Lrj7G0OZuYYLAY9SV4ygoaAf0+CNqU92MBt+7pmo53JVQ=="),
    ("angular", "1.8.3",
     "sha512-5qjkWIQQVsHj4Sb5TcEs4WZWpFeVFHXwxEBHUhrny41D8UrBAd6T/6nPPAsLngJCReIOqi95W3mxdveveutpZw=="),
    ("async", "3.2.6",
     "sha512-htCUDlxyyCLMgaM3xXg0C0LW2xqfuQ6p05pCEIsXuyQ+a1koYKTuBMzRNwmybfLgvJDMd0r1LTn4+E0Ti6C2AA=="),
    ("commander", "15.1.0",
     "sha512-cgnQ88TRrWcC7pVq46RzJVRMktu3W2RcbnoidnfBsl1bmDCBwJS/udcIZpKoCrbAYYaCqsz1yZCVIgbIaU3ddQ=="),
    ("semver", "7.8.6",
     "sha512-9lpSSU4Mly3mrtruwLs1eLK6+gzbzqeBFwRNjIjE+9LuDpWdYctrQlQ3ej1Ilgi7gknpsTRnPoLP8DpCHqHIJw=="),
    ("fs-extra", "11.4.1",
     "sha512-KYAb4c9BJQI6QqGKthV68OHe0badztdXJWKo0WtBA9IuCFPTKvE5ZdUBglP833aMjhaSPNO4A5j/EkzZtGlKjA=="),
    ("socket.io", "4.8.4",
     "sha512-9ZV9zg8vN8hO3Y25DhR7nUkJ1VDnBhq5O/JrXhFT9s6+F0gqytSASTHVfCFc2mJXaTfARroErplXlzFWwETZqQ=="),
    ("xmldom", "0.6.0",
     "sha512-iAcin401y58LckRZ0TkI4k0VSM1Qg0KGSc3i8rU+xrxe19A/BN1zHyVSJY7uoutVlaTSzYyk/v5AmkewAP7jtg=="),
    ("sax", "1.6.1",
     "sha512-42tBVwLWnaQvW5zc4HbZrTuWccECCZfBi92FDuwtqxasH+JbPB3/FOKb1m222K42R4WxuxzzMsTswfzgtSu64Q=="),
    ("xml2js", "0.6.2",
     "sha512-T4rieHaC1EXcES0Kxxj4JWgaUQHDk+qwHcYOCFHfiwKz7tOVPLq7Hjq9dM1WCMhylqMEfP7hMcOIChvotiZegA=="),
    ("mustache", "4.2.0",
     "sha512-71ippSywq5Yb7/tVYyGbkBggbU8H3u5Rz56fH60jGFgr8uHwxs+aSKeqmluIVzM0m0kB7xQjKS6qPfd0b2ZoqQ=="),
    ("ejs", "7.0.2",
     "sha512-LcDSEP6Oclb9sTiSyG0MpG0RuKvLDRxCOOt+2sIk+kdk1rMkFU8SRnT0qaNt5zvU0LOV1YXXOvIoZL/sKwabvw=="),
    ("esprima", "4.0.1",
     "sha512-eGuFFw7Upda+g4p+QHvnW0RyTX/SVeJBDM/gCtMARO0cLuT2HcEKnTPvhjV6aGeqrCB/sbNop0Kszm0jsaWU4A=="),
    ("browserify", "17.0.1",
     "sha512-pxhT00W3ylMhCHwG5yfqtZjNnFuX5h2IJdaBfSo4ChaaBsIp9VLrEMQ1bHV+Xr1uLPXuNDDM1GlJkjli0qkRsw=="),
    ("grunt", "1.6.3",
     "sha512-ng0CbpyNp/ox5e5CBY9TkZgVdAL4wK+nBHO6rNE8cXGa5kM++Lxlp0MpFBVZbpgOR2oCp/91V+T3CZVSWWLqMA=="),
    ("gulp", "5.0.1",
     "sha512-PErok3DZSA5WGMd6XXV3IRNO0mlB+wW3OzhFJLEec1jSERg2j1bxJ6e5Fh6N6fn3FH2T9AP4UYNb/pYlADB9sA=="),
)
# Folders that hold tests, examples, built bundles, generated code or data, not the package's
# own code (dist/ and build/ are a bundler's output; locale/ is tables).
JS_LEFT_OUT_FOLDERS = frozenset({
    "test", "tests", "__tests__", "spec", "specs", "example", "examples", "benchmark",
    "benchmarks", "bench", "node_modules", "dist", "umd", "min", "locale", "locales", "vendor",
    "fixtures", "docs", "doc", "coverage", "types", "typings", "build", "bundles",
    "generated"})


# A Java project's folders that hold its tests, examples, benchmarks or generated code (Maven's
# src/test/java and src/it, Gradle's src/jmh, `samples/`), not its own code; the JDK's src.zip
# has none. Below a source root (a folder named JAVA_SOURCE_ROOT) folders are packages, and a
# package may have any of these names (org.apache.commons.io.build, it.unimi.dsi): none applies.
JAVA_LEFT_OUT_FOLDERS = frozenset({
    "test", "tests", "it", "testing", "example", "examples", "sample", "samples", "benchmark",
    "benchmarks", "jmh", "generated", "generated-sources", "target", "build", "docs", "doc",
    "fixtures", "testdata", "test-data", "demo", "demos"})
JAVA_SOURCE_ROOT = "java"


def npm_tarball_url(registry: str, name: str, version: str) -> str:
  """Where the registry keeps a package's tarball (npm's own layout, unscoped names)."""
  return f"{registry.rstrip('/')}/{name}/-/{name}-{version}.tgz"


def check_integrity(path: str, integrity: str) -> None:
  """An SRI string (`sha512-<base64>`), as npm's lock files and the registry give it."""
  algorithm, _, expected = integrity.partition("-")
  if algorithm not in ("sha512", "sha256", "sha1"):
    raise SourceError(f"{path}: integrity {integrity!r} is not sha512/sha256/sha1")
  digest = hashlib.new(algorithm)
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      digest.update(chunk)
  if base64.b64encode(digest.digest()).decode("ascii") != expected:
    raise SourceError(f"{path}: its {algorithm} is not the pinned integrity {integrity}; "
                      "the download is kept out")


def npm_repositories(downloads: str, registry: Optional[str] = None,
                     packages: Optional[Tuple[Tuple[str, str, str], ...]] = None,
                     max_files: Optional[int] = None,
                     left_out: Optional[LeftOut] = None) -> Dict[str, Dict[str, bytes]]:
  """The .js files of each pinned npm package (`npm/<name>`), downloaded from `registry`
  (default $NPM_CONFIG_REGISTRY, else npm's own) into `downloads`, checked against its
  integrity, unpacked there. `packages`: (name, version, integrity)s, NPM_PACKAGES unless
  given."""
  left_out = collections.Counter() if left_out is None else left_out
  registry = registry or os.environ.get("NPM_CONFIG_REGISTRY") or NPM_REGISTRY
  repositories: Dict[str, Dict[str, bytes]] = {}
  taken = 0
  for name, version, integrity in packages or NPM_PACKAGES:
    try:
      tarball = archive.download(npm_tarball_url(registry, name, version), downloads, integrity)
    except archive.ArchiveError as e:
      raise SourceError(f"{e}; npm packages are fetched from {registry} "
                        "($NPM_CONFIG_REGISTRY names a mirror)") from None
    check_integrity(tarball, integrity)
    unpacked = unpack_once(tarball, downloads)
    found = evenly(dict(source_files(os.path.join(unpacked, "package"), ".js", left_out,
                                     JS_LEFT_OUT_FOLDERS)), left_out)
    for path, content in found.items():
      repositories.setdefault(f"npm/{name}", {})[path] = content
      taken += 1
      if max_files is not None and taken >= max_files:
        return repositories
  return repositories


# ---- both ---------------------------------------------------------------------------------


def unpack_once(archive_path: str, downloads: str) -> str:
  """`archive_path` unpacked once under `downloads` (whole or not at all, within
  UNPACK_LIMITS), named by its content; links left out (`archive.extract` logs them)."""
  out = os.path.join(downloads, f"{os.path.basename(archive_path)}."
                     f"{archive.sha256_of(archive_path)[:12]}")
  try:
    return archive.extract(archive_path, out, UNPACK_LIMITS, skip_links=True)
  except archive.ArchiveError as e:
    raise SourceError(str(e)) from None


def _count(top: str, extension: str) -> int:
  return sum(name.endswith(extension) for _, _, names in os.walk(top) for name in names)


def without_license_notice(content: bytes, words: str, counted: LeftOut) -> bytes:
  """`content` without its leading block comment (and the blank lines after it) where that
  comment holds `words`; counted under LICENSE_TAKEN_OUT."""
  opened = len(content) - len(content.lstrip())
  if not content.startswith(b"/*", opened):
    return content
  end = content.find(b"*/", opened + 2)
  if end < 0 or words.encode("utf-8") not in content[opened:end]:
    return content
  counted[LICENSE_TAKEN_OUT] += 1
  return content[end + 2:].lstrip(b"\r\n")


def evenly(contents: Dict[str, bytes], left_out: LeftOut) -> Dict[str, bytes]:
  """`contents` ({path: bytes}) cut to MAX_FILES_PER_REPOSITORY files, taken evenly over its
  paths in order (every folder keeps its share); the rest counted."""
  paths = sorted(contents)
  if len(paths) <= MAX_FILES_PER_REPOSITORY:
    return contents
  left_out[OVER_REPOSITORY_CAP] += len(paths) - MAX_FILES_PER_REPOSITORY
  taken = (paths[i * len(paths) // MAX_FILES_PER_REPOSITORY]
           for i in range(MAX_FILES_PER_REPOSITORY))
  return {path: contents[path] for path in taken}


def is_minified(content: bytes) -> bool:
  lines = content.split(b"\n")
  return (max(map(len, lines)) > MAX_LINE_CHARS
          or len(content) / len(lines) > MAX_MEAN_LINE_CHARS)


def source_files(top: str, extension: str, left_out: LeftOut, left_out_folders=frozenset(),
                 source_root: Optional[str] = None) -> Iterator[Tuple[str, bytes]]:
  """(path under `top` with "/", bytes) of each `extension` file, in path order: dot-folders
  and `left_out_folders` not entered (except below a folder named `source_root`, where folders
  are packages), links not followed; a file over MAX_SOURCE_BYTES or minified is left out, and
  every file of `extension` left out is counted by reason."""
  for dirpath, dirnames, filenames in os.walk(top):
    in_packages = source_root is not None and source_root in os.path.relpath(
        dirpath, top).split(os.sep)
    kept = []
    for d in sorted(dirnames):
      if os.path.islink(os.path.join(dirpath, d)):
        left_out[LINK] += 1
      elif d.startswith(".") or (d in left_out_folders and not in_packages):
        left_out[LEFT_OUT_FOLDER] += _count(os.path.join(dirpath, d), extension)
      else:
        kept.append(d)
    dirnames[:] = kept
    for name in sorted(filenames):
      if not name.endswith(extension):
        continue
      path = os.path.join(dirpath, name)
      if os.path.islink(path):
        left_out[LINK] += 1
        continue
      if name.endswith((".min.js", ".bundle.js")):
        left_out[MINIFIED] += 1
        continue
      with open(path, "rb") as f:
        content = f.read(MAX_SOURCE_BYTES + 1)
      if len(content) > MAX_SOURCE_BYTES:
        left_out[TOO_LARGE] += 1
      elif is_minified(content):
        left_out[MINIFIED] += 1
      else:
        yield os.path.relpath(path, top).replace(os.sep, "/"), content
