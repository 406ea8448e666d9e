"""mesh_tensorflow.placement_mesh_impl.PlacementMeshImpl.einsum (the CPU and GPU meshes' one
call per slice of a product), replaced: with `code_t5.products.column_block` bound above 0, a
product that is one 2-D matmul goes through code_t5.products.einsum; with it 0 (the default),
and on TPU meshes (SimdMeshImpl, not changed), mesh-tf's tf.einsum as before."""

from mesh_tensorflow import placement_mesh_impl

from code_t5 import products

_MESH_IMPL = placement_mesh_impl.PlacementMeshImpl
_MESH_TF_EINSUM = _MESH_IMPL.einsum


def _einsum(mesh_impl, equation, *slices):
  column_block = products.products()
  if not column_block or len(slices) != 2:
    return _MESH_TF_EINSUM(mesh_impl, equation, *slices)
  return products.einsum(equation, *slices, column_block=column_block)


def install() -> None:
  _MESH_IMPL.einsum = _einsum
