"""The output kinds a Loader or RemoteLoader delivers, and the framework each needs."""

from __future__ import annotations

import importlib

import pyarrow as pa

from stoker import _core

# output= -> (module to import, what to install).
_NEEDS = {
    "torch": ("torch", "pip install torch"),
    "jax": ("jax", "pip install jax"),
    "tensorflow": ("tensorflow", "pip install tensorflow-cpu (or tensorflow)"),
    "torchrec": ("torchrec", ("pip install torchrec (with fbgemm-gpu, or fbgemm-gpu-cpu on a "
                              "CPU host): docs/torchrec.md")),
}



def check_output(output: str) -> None:
    """Raises ValueError for an unknown ``output``, ImportError naming the package when its
    framework is not installed."""
    _core.check_output(output)
    if output in _NEEDS:
        module, install = _NEEDS[output]
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ImportError(f'output="{output}" needs {module}: {install}') from e


def check_schema(output: str, schema: pa.Schema) -> None:
    """Raises ValueError when the framework would change a column's values on the way in:
    JAX without ``jax_enable_x64`` turns 64-bit columns into 32-bit ones."""
    if output != "jax":
        return
    import jax
    # jax defines its config options as attributes at run time, unknown to its types.
    if jax.config.jax_enable_x64:  # type: ignore[attr-defined]
        return
    wide = [field.name for field in schema if _is_64_bit(field.type)]
    if wide:
        raise ValueError(
            f'output="jax": column(s) {", ".join(wide)} are 64-bit, and JAX without x64 '
            f"would narrow them to 32 bits (int64 ids past 2**31 would change). Enable it "
            f'(jax.config.update("jax_enable_x64", True)), or cast them with a transform '
            f'such as {{"op": "cast", "column": "{wide[0]}", "dtype": "int32"}}, or leave them '
            f"out of columns=")


def _is_64_bit(arrow_type: pa.DataType) -> bool:
    while pa.types.is_fixed_size_list(arrow_type) or pa.types.is_list(arrow_type) or \
            pa.types.is_large_list(arrow_type):
        arrow_type = arrow_type.value_type
    return (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)) and \
        arrow_type.bit_width == 64
