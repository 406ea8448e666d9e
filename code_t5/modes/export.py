"""Export: a SavedModel that completes lines, for serving (gin_configs/export.gin).

  register_serving_task  get_vocabulary's Task: registers `<name>_serving`, returns its name

mesh-tf's export serving graph tokenizes each request with `vocabulary.encode_tf`, appends EOS
and then cuts on the right, which would keep the start of the file and drop the EOS. The
vocabulary is the one hook inside that graph, so the serving Task's inputs vocabulary
(`ServingVocabulary`) cuts there, to the same window as the Task (`preprocessors.inputs_window`).
"""

import gin
import seqio

from code_t5 import gin_config
from code_t5 import preprocessors
from code_t5 import vocabulary


class ServingVocabulary(vocabulary.FlccVocabulary):
  """The Task's vocabulary, whose `encode_tf` keeps the window the model reads of a prefix
  (at utils.run.sequence_length["inputs"]); mesh-tf appends the EOS after it."""

  def _encode_tf(self, s):
    inputs_length = gin_config.run_parameter("sequence_length")["inputs"]
    return preprocessors.inputs_window(super()._encode_tf(s), inputs_length,
                                       vocabulary.newline_id(self))


@gin.configurable(module="code_t5")
def register_serving_task(mixture_or_task_name=gin.REQUIRED):
  """Registers `<name>_serving` (once) and returns that name, for export.gin's get_vocabulary.

  mesh_transformer_main takes the vocabulary of export from a Task or Mixture name; this Task
  has the features of `mixture_or_task_name`'s first Task, with a ServingVocabulary for the
  inputs, and no data.
  """
  preprocessors.check_no_repository_context("the SavedModel export")
  name = f"{mixture_or_task_name}_serving"
  if name not in seqio.TaskRegistry.names():
    task = seqio.get_subtasks(seqio.get_mixture_or_task(mixture_or_task_name))[0]
    features = dict(task.output_features)
    inputs = features["inputs"]
    features["inputs"] = seqio.Feature(ServingVocabulary(inputs.vocabulary.name),
                                       add_eos=inputs.add_eos)
    seqio.TaskRegistry.add(name, source=task.source, preprocessors=[],
                           output_features=features)
  return name
