"""rnn.onnx: ONNX models with LSTM, GRU and RNN nodes, imported, compiled for the CPU and run.

* Every LSTM / GRU / RNN node test case that the installed onnx package ships (its backend
  test cases, onnx.backend.test.case.node.{lstm,gru,rnn}), with the package's tolerances.
* Random-weight cases for every attribute and optional input of the three operators,
  against onnx.reference.ReferenceEvaluator where it implements what the case uses, and
  always against onnx_reference.py, a float64 reading of the spec (itself checked against
  the ReferenceEvaluator on the cases they share). Each case runs at two sequence lengths
  and batch sizes through one compiled model (dynamic T and B).
* Weights as initializers and as graph inputs, initializer-backed inputs left out, graphs
  whose other nodes run in numpy, a model saved and loaded without the compiler, a torch
  export (2-layer bidirectional LSTM and GRU, given sequence lengths) against torch, and the
  errors: unsupported nodes and attribute values name the node.
"""

import importlib

import numpy as np
import onnx
import onnx.backend.test.case.node as onnx_node_cases
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_reference
from test_dsl_common import rnn  # a fresh compile cache for the session

import rnn.onnx as ronnx


# ------------------------------------------------------------------------------------------
# The onnx package's node tests
# ------------------------------------------------------------------------------------------

def _package_cases():
    """The backend test cases of the LSTM, GRU and RNN operators: importing their modules
    runs their exporters, which append TestCase objects (model and data sets)."""
    onnx_node_cases._TargetOpType = None
    for name in ("lstm", "gru", "rnn"):
        importlib.import_module(f"onnx.backend.test.case.node.{name}")
    cases = [c for c in onnx_node_cases._NodeTestCases
             if c.model.graph.node[0].op_type in ronnx.RECURRENT_OPS]
    return {c.name: c for c in cases}


PACKAGE_CASES = _package_cases()


def test_package_has_the_node_tests():
    ops = {c.model.graph.node[0].op_type for c in PACKAGE_CASES.values()}
    assert ops == {"LSTM", "GRU", "RNN"} and len(PACKAGE_CASES) >= 18, sorted(PACKAGE_CASES)


@pytest.mark.parametrize("name", sorted(PACKAGE_CASES))
def test_package_node_case(name):
    case = PACKAGE_CASES[name]
    model = ronnx.load(case.model)
    for inputs, expected in case.data_sets:
        outputs = model(*inputs)
        assert len(outputs) == len(expected)
        for k, (ours, ref) in enumerate(zip(outputs, expected)):
            assert ours.shape == ref.shape, f"{name}: output #{k}"
            np.testing.assert_allclose(ours, ref, rtol=case.rtol, atol=case.atol,
                                       err_msg=f"{name}: output #{k}")


# ------------------------------------------------------------------------------------------
# Random weights, every attribute
# ------------------------------------------------------------------------------------------

# id: (op, attributes, optional inputs present, weights as initializers, checked by the
#      ReferenceEvaluator too)
CASES = {
    "lstm_all_inputs": ("LSTM", {}, ("B", "initial_h", "initial_c", "P"), True, True),
    "lstm_bidirectional_layout1": (
        "LSTM", {"direction": "bidirectional", "layout": 1},
        ("B", "initial_h", "initial_c", "P"), False, True),
    "lstm_reverse_lengths": ("LSTM", {"direction": "reverse"}, ("B", "sequence_lens"), True,
                             False),
    "lstm_clip_input_forget_activations": (
        "LSTM", {"direction": "bidirectional", "clip": 0.7, "input_forget": 1,
                 "hidden_size": 5,
                 "activations": ["HardSigmoid", "ScaledTanh", "Softsign",
                                 "Sigmoid", "Elu", "Softplus"],
                 "activation_alpha": [0.3, 1.5, 0.8], "activation_beta": [0.4, 0.6]},
        ("B", "initial_h", "initial_c", "P", "sequence_lens"), False, False),
    "lstm_no_bias_layout1_lengths": (
        "LSTM", {"layout": 1, "activations": ["LeakyRelu", "ThresholdedRelu", "Affine"],
                 "activation_alpha": [0.2, 0.3, 0.5], "activation_beta": [0.1]},
        ("sequence_lens", "initial_h"), True, False),
    "gru_linear_before_reset_bidirectional": (
        "GRU", {"direction": "bidirectional", "linear_before_reset": 1},
        ("B", "initial_h"), True, True),
    "gru_reverse_layout1": ("GRU", {"direction": "reverse", "layout": 1}, ("B", "initial_h"),
                            False, True),
    "gru_activations_clip_lengths": (
        "GRU", {"linear_before_reset": 1, "clip": 0.5,
                "activations": ["HardSigmoid", "Softsign"]},
        ("B", "sequence_lens", "initial_h"), True, False),
    "gru_no_bias_activations_bidirectional": (
        "GRU", {"direction": "bidirectional",
                "activations": ["Sigmoid", "Relu", "LeakyRelu", "ScaledTanh"],
                "activation_alpha": [0.05, 0.9], "activation_beta": [1.2]},
        ("initial_h",), False, False),
    "rnn_affine_bidirectional": (
        "RNN", {"direction": "bidirectional", "activations": ["Affine", "Affine"],
                "activation_alpha": [0.5, 0.5], "activation_beta": [0.1, 0.1]},
        ("B", "initial_h"), True, True),
    "rnn_reverse_layout1": ("RNN", {"direction": "reverse", "layout": 1}, ("B",), False,
                            True),
    "rnn_relu_elu_lengths_clip": (
        "RNN", {"direction": "bidirectional", "layout": 1, "clip": 1.5,
                "activations": ["Relu", "Elu"], "activation_alpha": [0.6]},
        ("B", "sequence_lens", "initial_h"), True, False),
    "rnn_thresholded_relu": ("RNN", {"activations": ["ThresholdedRelu"],
                                     "activation_alpha": [0.1]}, ("B",), True, False),
    "rnn_softplus": ("RNN", {"activations": ["Softplus"]}, ("initial_h",), False, False),
}
INPUTS = {"LSTM": ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"),
          "GRU": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
          "RNN": ("X", "W", "R", "B", "sequence_lens", "initial_h")}
I_, H_ = 4, 5
SHAPES = [(6, 3), (2, 5)]  # (T, B): one model, two calls


def _make_case(name, T, B):
    """The model (graph inputs X, the weights unless initializers, the optional inputs) and
    the feeds for sequence length T and batch B."""
    op, attrs, optional, weights_inside, _ = CASES[name]
    rng = np.random.default_rng([sorted(CASES).index(name), T, B])
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    G = onnx_reference.GATES[op]
    layout = attrs.get("layout", 0)
    values = {
        "X": rng.standard_normal((B, T, I_) if layout else (T, B, I_)),
        "W": 0.6 * rng.standard_normal((D, G * H_, I_)),
        "R": 0.6 * rng.standard_normal((D, G * H_, H_)),
        "B": 0.3 * rng.standard_normal((D, 2 * G * H_)),
        "initial_h": 0.5 * rng.standard_normal((B, D, H_) if layout else (D, B, H_)),
        "initial_c": 0.5 * rng.standard_normal((B, D, H_) if layout else (D, B, H_)),
        "P": 0.4 * rng.standard_normal((D, 3 * H_)),
    }
    values = {k: v.astype(np.float32) for k, v in values.items()}
    lens = rng.integers(1, T + 1, size=B).astype(np.int32)
    lens[0] = T
    values["sequence_lens"] = lens
    roles = [r for r in INPUTS[op] if r in ("X", "W", "R") or r in optional]
    node_inputs = [r if r in roles else "" for r in INPUTS[op]]
    while node_inputs[-1] == "":
        node_inputs.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, node_inputs, outputs, name=f"{name}_node", **attrs)
    weights = {"W", "R", "B", "P"} if weights_inside else set()

    def vi(role):
        v = values[role]
        shape = list(v.shape)
        if role == "X":
            shape = ["B", "T", I_] if layout else ["T", "B", I_]
        elif role == "sequence_lens":
            shape = ["B"]
        elif role.startswith("initial"):
            shape = ["B", D, H_] if layout else [D, "B", H_]
        elem = TensorProto.INT32 if role == "sequence_lens" else TensorProto.FLOAT
        return helper.make_tensor_value_info(role, elem, shape)

    graph_inputs = [vi(r) for r in roles if r not in weights]
    inits = [numpy_helper.from_array(values[r], r) for r in roles if r in weights]
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outputs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 22)])
    feeds = {r: values[r] for r in roles if r not in weights}
    return model, feeds, {r: values[r] for r in roles}


@pytest.fixture(scope="module")
def case_models():
    """One imported model per case (its first shape's graph; the weights, where they are
    initializers, are the first shape's too)."""
    models = {}

    def get(name):
        if name not in models:
            proto, _, _ = _make_case(name, *SHAPES[0])
            models[name] = (proto, ronnx.load(proto))
        return models[name]
    return get


def _close(ours, ref, what):
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, expected {ref.shape}"
    err = float(np.max(np.abs(ours - ref))) if ours.size else 0.0
    limit = 1e-5 + 2e-5 * float(np.max(np.abs(ref))) if ref.size else 0.0
    assert err <= limit, f"{what}: max error {err:.3g} (limit {limit:.3g})"


@pytest.mark.parametrize("name", sorted(CASES))
def test_attribute_case(case_models, name):
    op, attrs, _, weights_inside, by_reference = CASES[name]
    first_proto, model = case_models(name)
    for T, B in SHAPES:
        proto, feeds, values = _make_case(name, T, B)
        if weights_inside:  # the weights are the first graph's initializers
            for init in first_proto.graph.initializer:
                values[init.name] = numpy_helper.to_array(init)
            proto = first_proto
        outputs = model(**feeds)
        spec = onnx_reference.run(op, attrs, **values)
        for k, (ours, ref) in enumerate(zip(outputs, spec)):
            _close(ours, ref, f"{name} T={T} B={B}: output #{k} against the spec's reading")
        if by_reference:
            evaluated = ReferenceEvaluator(proto).run(None, feeds)
            for k, (ours, ref, mine) in enumerate(zip(outputs, evaluated, spec)):
                _close(ours, ref, f"{name} T={T} B={B}: output #{k} against onnx.reference")
                _close(mine, ref, f"{name}: the spec's reading against onnx.reference")
        if "sequence_lens" in feeds:
            lens = feeds["sequence_lens"]
            Y = outputs[0] if attrs.get("layout", 0) == 0 else outputs[0].transpose(1, 2, 0, 3)
            for b, n in enumerate(lens):
                assert not np.any(Y[n:, :, b]), f"{name}: Y past row {b}'s length is not 0"


def test_every_activation_is_covered():
    used = {a for _, attrs, *_ in CASES.values() for a in attrs.get("activations", [])}
    assert used | {"Tanh", "Sigmoid"} == set(ronnx.ACTIVATIONS)


# ------------------------------------------------------------------------------------------
# Graphs: initializer-backed inputs, other nodes, saving
# ------------------------------------------------------------------------------------------

def _lstm_in_a_graph(extra_nodes=(), weights_as_inputs=True):
    """X [B, T, 3] -> Transpose -> LSTM (weights as initializers, also listed as graph
    inputs as IR < 4 does) -> Squeeze -> Relu; outputs the Relu and Y_h."""
    rng = np.random.default_rng(5)
    W = (0.5 * rng.standard_normal((1, 16, 3))).astype(np.float32)
    R = (0.5 * rng.standard_normal((1, 16, 4))).astype(np.float32)
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
             numpy_helper.from_array(np.array([1], np.int64), "axes")]
    nodes = [helper.make_node("Transpose", ["X"], ["Xt"], perm=[1, 0, 2], name="to_tbi"),
             helper.make_node("LSTM", ["Xt", "W", "R"], ["Y", "Y_h"], name="lstm",
                              hidden_size=4),
             helper.make_node("Squeeze", ["Y", "axes"], ["Ys"], name="squeeze"),
             helper.make_node("Relu", ["Ys"], ["out"], name="relu"), *extra_nodes]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["B", "T", 3])]
    if weights_as_inputs:
        inputs += [helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 16, 3]),
                   helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 16, 4])]
    graph = helper.make_graph(
        nodes, "lstm_graph", inputs,
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 22)]), W, R


def test_graph_with_other_nodes_and_optional_inputs(tmp_path):
    proto, W, R = _lstm_in_a_graph()
    model = ronnx.load(proto)
    assert model.input_names == ["X"] and model.optional_input_names == ["W", "R"]
    x = np.random.default_rng(6).standard_normal((2, 5, 3)).astype(np.float32)
    expected = ReferenceEvaluator(proto).run(None, {"X": x})
    out = model(x)
    for ours, ref in zip(out, expected):
        _close(ours, ref, "LSTM between Transpose and Squeeze/Relu")
    # An initializer-backed input given: it overrides the initializer.
    W2 = np.ascontiguousarray(W[:, ::-1])
    ref2 = ReferenceEvaluator(proto).run(None, {"X": x, "W": W2, "R": R})
    for ours, ref in zip(model(x, W=W2), ref2):
        _close(ours, ref, "W given by name")
    for ours, ref in zip(model(x, W2, R), ref2):
        _close(ours, ref, "W and R given in order")
    # Saved and loaded without compiling.
    model.save(tmp_path / "saved")
    loaded = ronnx.load(tmp_path / "saved")
    for ours, ref in zip(loaded(x), out):
        np.testing.assert_array_equal(ours, ref)


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch")
    proto, _, _ = _lstm_in_a_graph()
    model = ronnx.load(proto)
    x = np.random.default_rng(7).standard_normal((3, 4, 3)).astype(np.float32)
    out = model(torch.from_numpy(x))
    assert all(isinstance(o, torch.Tensor) for o in out)
    for ours, ref in zip(out, model(x)):
        np.testing.assert_array_equal(ours.numpy(), ref)


def test_errors_name_the_node():
    proto, _, _ = _lstm_in_a_graph(
        [helper.make_node("Conv", ["out", "W"], ["conv"], name="my_conv")])
    with pytest.raises(ronnx.UnsupportedNodeError,
                       match=r"node #4 'my_conv' \(Conv\): operator Conv is not supported: "
                             r"rnn.onnx compiles LSTM, GRU, RNN and runs .*Transpose"):
        ronnx.load(proto)

    def lstm_model(**attrs):
        node = helper.make_node("LSTM", ["X", "W", "R"], ["Y"], name="bad", **attrs)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", 3]),
                          helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 16, 3]),
                          helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 16, 4])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
        return helper.make_model(graph)

    cases = [
        ({"direction": "sideways"}, r"node #0 'bad' \(LSTM\): attribute direction='sideways'; "
                                    "it must be forward, reverse or bidirectional"),
        ({"activations": ["Sigmoid", "Swish", "Tanh"]},
         r"node #0 'bad' \(LSTM\): activation 'Swish' is not one of the operator's"),
        ({"activations": ["Sigmoid", "Tanh"]},
         r"attribute activations has 2 entries \['Sigmoid', 'Tanh'\]; LSTM with "
         r"direction=forward takes 3 \(3 per direction\)"),
        ({"activation_alpha": [0.5]},
         r"attribute activation_alpha has 1 value\(s\) more than the activations"),
        ({"layout": 2}, r"attribute layout=2; it must be 0"),
        ({"clip": -1.0}, r"attribute clip=-1.0; a clip threshold must be positive"),
        ({"hidden_size": 5}, r"attribute hidden_size=5 but W is \[1, 16, 3\]"),
        ({"linear_before_reset": 1}, r"unknown attribute 'linear_before_reset'"),
        ({"direction": "bidirectional"}, r"W is \[1, 16, 3\]: its first dimension must be "
                                         r"num_directions=2"),
    ]
    for attrs, message in cases:
        with pytest.raises(ronnx.OnnxImportError, match=message):
            ronnx.load(lstm_model(**attrs))

    # A weight whose shape is not known when the model is loaded.
    node = helper.make_node("GRU", ["X", "W", "R"], ["Y"], name="dyn")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", 3]),
                      helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, "G", 3]),
                      helper.make_tensor_value_info("R", TensorProto.FLOAT, [1, 12, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    with pytest.raises(ronnx.OnnxImportError, match=r"node #0 'dyn' \(GRU\): the shape of "
                                                    r"input W \('W'\) must be known"):
        ronnx.load(helper.make_model(graph))


# ------------------------------------------------------------------------------------------
# A torch export
# ------------------------------------------------------------------------------------------

def test_torch_export_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    import torch_onnx_export

    for kind in ("LSTM", "GRU"):
        module, path = torch_onnx_export.export(kind, tmp_path / f"{kind}.onnx", seed=1)
        model = ronnx.load(path)
        for T, lengths in ((7, [7, 3, 1, 5]), (4, [2, 4])):
            x, expected = torch_onnx_export.torch_reference(module, T, lengths, seed=T)
            out = model(x.numpy(), np.asarray(lengths, np.int32))
            for k, (ours, ref) in enumerate(zip(out, expected)):
                _close(ours, ref.numpy(), f"{kind} export, T={T}, lengths={lengths}: "
                                          f"output #{k}")
