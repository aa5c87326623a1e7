"""Writes the ONNX models of import.test: a bidirectional batch-first LSTM with every
optional input, between a Transpose and a Relu (good.onnx); a GRU followed by a Conv
(unsupported.onnx); an RNN with an unknown activation (bad_activation.onnx)."""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
rng = np.random.default_rng(0)


def f32(*shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32))


def weights(names_shapes):
    inits = []
    for name, shape in names_shapes:
        t = f32(*shape)
        t.name = name
        inits.append(t)
    return inits


lstm = helper.make_node("LSTM", ["Xt", "W", "R", "B", "lens", "h0", "c0", "P"],
                        ["Y", "Y_h", "Y_c"], name="encoder", direction="bidirectional",
                        layout=1, hidden_size=5, clip=3.0)
graph = helper.make_graph(
    [helper.make_node("Transpose", ["X"], ["Xt"], perm=[1, 0, 2], name="to_batch_first"),
     lstm, helper.make_node("Relu", ["Y"], ["out"], name="relu")],
    "good",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", 3]),
     helper.make_tensor_value_info("lens", TensorProto.INT32, ["B"]),
     helper.make_tensor_value_info("h0", TensorProto.FLOAT, ["B", 2, 5]),
     helper.make_tensor_value_info("c0", TensorProto.FLOAT, ["B", 2, 5])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)],
    initializer=weights([("W", (2, 20, 3)), ("R", (2, 20, 5)), ("B", (2, 40)),
                         ("P", (2, 15))]))
save(helper.make_model(graph), f"{out}/good.onnx")

graph = helper.make_graph(
    [helper.make_node("GRU", ["X", "W", "R"], ["Y"], name="gru", linear_before_reset=1),
     helper.make_node("Conv", ["Y", "K"], ["Z"], name="conv")],
    "unsupported",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", 3])],
    [helper.make_tensor_value_info("Z", TensorProto.FLOAT, None)],
    initializer=weights([("W", (1, 12, 3)), ("R", (1, 12, 4)), ("K", (1, 1, 1))]))
save(helper.make_model(graph), f"{out}/unsupported.onnx")

graph = helper.make_graph(
    [helper.make_node("RNN", ["X", "W", "R"], ["Y"], name="elman", activations=["Swish"])],
    "bad_activation",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", 3])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    initializer=weights([("W", (1, 4, 3)), ("R", (1, 4, 4))]))
save(helper.make_model(graph), f"{out}/bad_activation.onnx")
