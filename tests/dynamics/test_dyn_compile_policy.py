"""The compilation policy: a function compiled for one signature compiles at its first call,
takes its module-level name's place, and refuses other argument types."""

import importlib.util

import numpy as np
import pytest

PROBE = """
from hopsim.dynamics._jit import F64_VECTOR, compiled_for

@compiled_for((F64_VECTOR, F64_VECTOR))
def axpy_into(x, y):
    for i in range(len(x)):
        y[i] += 2.0 * x[i]
"""


def test_a_function_compiled_for_one_signature_waits_for_its_first_call(tmp_path):
    (tmp_path / "compile_policy_probe.py").write_text(PROBE)
    spec = importlib.util.spec_from_file_location("compile_policy_probe", tmp_path / "compile_policy_probe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    stub = module.axpy_into
    assert not hasattr(stub, "signatures")  # nothing compiled at import
    y = np.ones(3)
    stub(np.arange(3.0), y)
    assert y.tolist() == [1.0, 3.0, 5.0]
    assert module.axpy_into is not stub and len(module.axpy_into.signatures) == 1
    with pytest.raises(TypeError):  # no new specialization at call time
        module.axpy_into(np.arange(3), y)
    stub(np.arange(3.0), y)  # a reference taken before still works
    assert y.tolist() == [1.0, 5.0, 9.0]
