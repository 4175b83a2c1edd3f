"""Bad input raises gpuplan.InputError naming the keyword, the value and what is accepted, as the command line
names the flag."""
import pytest

import gpuplan
from conftest import cli


def test_input_error_is_a_value_error_with_its_parts():
    with pytest.raises(gpuplan.InputError) as e:
        gpuplan.memory(model="llama-3.1-70b", tp=3)
    assert isinstance(e.value, ValueError)
    assert e.value.field == "tp"
    assert e.value.value.startswith("3 ")
    assert "a divisor of 64" in e.value.accepted
    # The command line says the same of --tp.
    message = cli("memory", "--model", "llama-3.1-70b", "--tp", "3", expect_status=2)
    assert message.strip() == "gpuplan: error: --" + str(e.value)


@pytest.mark.parametrize("call, field", [
    (lambda: gpuplan.memory(model="llama-3.1-70b", tp="abc"), "tp"),
    (lambda: gpuplan.memory(model="llama-3.1-70b", precision="fp12"), "precision"),
    (lambda: gpuplan.memory(model="llama-3.1-70b", tq=8), "tq"),
    (lambda: gpuplan.memory(model="no-such-model"), "model"),
    (lambda: gpuplan.memory(model="no/such/config.json"), "model"),
    (lambda: gpuplan.memory(), "model"),
    (lambda: gpuplan.memory(model="llama-3.1-8b", gpu_memory="lots"), "gpu_memory"),
    (lambda: gpuplan.memory(model="llama-3.1-8b", layers=0), "layers"),
    (lambda: gpuplan.estimate(model="llama-3.1-8b", system="dgx-h1000"), "system"),
    (lambda: gpuplan.estimate(model="llama-3.1-8b", system="dgx-h100", order="tp-dp"), "order"),
    (lambda: gpuplan.estimate(model="llama-3.1-8b", system="dgx-1-v100"), "precision"),
    (lambda: gpuplan.plan(model="llama-3.1-8b", system="dgx-h100"), "global_batch"),
    (lambda: gpuplan.plan(model="llama-3.1-8b", system="dgx-h100", global_batch=8, tp=[1, 0]), "tp"),
    (lambda: gpuplan.size(model="llama-3.1-8b", tokens="1T", nodes="8:2"), "nodes"),
    (lambda: gpuplan.size(model="llama-3.1-8b", tokens="1T", systems=["dgx-h1000"]), "systems"),
    (lambda: gpuplan.comm("allreduce", size="1GB", ranks=0, system="dgx-h100"), "ranks"),
    (lambda: gpuplan.comm("allreduce", size="1GB", ranks=4), "system"),
    (lambda: gpuplan.topo("/no/such/topology.txt"), "file"),
    (lambda: gpuplan.catalog("gpu"), "kind"),
    (lambda: gpuplan.catalog("gpus", "h1000"), "name"),
])
def test_each_error_names_its_keyword(call, field):
    with pytest.raises(gpuplan.InputError) as e:
        call()
    assert e.value.field == field, str(e.value)
    assert e.value.accepted


def test_values_python_cannot_pass():
    with pytest.raises(gpuplan.InputError) as e:
        gpuplan.memory(model="llama-3.1-8b", tp=object())
    assert e.value.field == "tp"
    with pytest.raises(gpuplan.InputError):
        gpuplan.memory(model="llama-3.1-8b", tp=2**70)
