"""gin text and gin's live config, read without running anything: a file's or a --gin_param's
literal bindings and includes, as gin's own parser reads them (the learning bench and the
run readers), and utils.run's parameters through their macros (decoding, export, the launch
checks)."""

import io

from code_t5 import files


class _Literals:
  """gin's parser delegate for reading values only: references and macros become None."""

  def configurable_reference(self, scoped_name, evaluate):
    del scoped_name, evaluate

  def macro(self, name):
    del name


def literal_bindings(path: str) -> dict:
  """{"selector.arg": value} of the gin file at `path`, as gin parses it: a macro under its
  name ("d_model"), a binding as written ("utils.run.batch_size"); references and macros used
  as values are None."""
  return literal_bindings_of(files.read_text(path))


def included_files_of(text: str) -> list:
  """The files gin text (a file's, or a --gin_param's) includes, in order, as written."""
  from gin import config_parser  # pylint: disable=g-import-not-at-top
  return [statement.filename
          for statement in config_parser.ConfigParser(io.StringIO(text), _Literals())
          if isinstance(statement, config_parser.IncludeStatement)]


def literal_bindings_of(text: str) -> dict:
  """literal_bindings of gin text (a file's, or --gin_param bindings one per line)."""
  from gin import config_parser  # pylint: disable=g-import-not-at-top
  bindings = {}
  for statement in config_parser.ConfigParser(io.StringIO(text), _Literals()):
    if isinstance(statement, config_parser.BindingStatement):
      bindings[".".join(filter(None, (statement.selector, statement.arg_name)))] = statement.value
  return bindings


def run_parameter(name: str, default=None):
  """utils.run's `name` as the running launch's gin config binds it, through macros
  (`%SPLIT`, `%DECODING_LENGTHS`), or `default` where nothing binds it."""
  return parameter(f"utils.run.{name}", default)


def parameter(name: str, default=None):
  """The binding `name` ("scope/configurable.argument") of the running launch's gin config,
  through macros, or `default` where nothing binds it."""
  import gin  # pylint: disable=g-import-not-at-top
  try:
    value = gin.query_parameter(name)
  except ValueError:
    return default
  while isinstance(value, gin.config.ConfigurableReference) and value.evaluate:
    value = gin.query_parameter(f"{value.scoped_selector}.value")  # a macro: SPLIT/macro
  return value
