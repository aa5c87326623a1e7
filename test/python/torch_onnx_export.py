"""A torch.nn.LSTM / GRU (2 layers, bidirectional) exported to ONNX with torch.onnx.export,
then given sequence lengths: a graph input `lengths` (int32 [B]) becomes every recurrent
node's sequence_lens. torch's exporter writes none (it does not export packed sequences),
and with lengths the ONNX operators compute what torch computes on a packed sequence:
outputs 0 past a row's length, final states at its last step. Used by test_onnx.py (CPU)
and bench/onnx_gpu_check.py (CUDA)."""

import warnings

import torch

INPUT, HIDDEN, LAYERS = 6, 8, 2


def export(kind, path, seed=0):
    """(module, path): a float32 torch.nn.LSTM or GRU exported to `path` with inputs x
    [T, B, INPUT] and lengths [B] and outputs y, h_n (and c_n)."""
    import onnx  # only here: the GPU machine runs torch_reference without it
    from onnx import TensorProto, helper

    torch.manual_seed(seed)
    module = getattr(torch.nn, kind)(INPUT, HIDDEN, num_layers=LAYERS, bidirectional=True)
    module.eval()
    x = torch.randn(5, 3, INPUT)
    outputs = ["y", "h_n"] + (["c_n"] if kind == "LSTM" else [])
    with warnings.catch_warnings():
        # The TorchScript exporter (dynamo=False, which needs no onnxscript) warns that it is
        # the legacy one, and about tracing the module's shape checks.
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), str(path), dynamo=False, input_names=["x"],
                          output_names=outputs, dynamic_axes={"x": {0: "T", 1: "B"}})
    model = onnx.load(str(path))
    model.graph.input.append(helper.make_tensor_value_info("lengths", TensorProto.INT32,
                                                           ["B"]))
    nodes = [n for n in model.graph.node if n.op_type == kind]
    assert len(nodes) == LAYERS, [n.op_type for n in model.graph.node]
    for node in nodes:
        while len(node.input) < 5:
            node.input.append("")
        node.input[4] = "lengths"
    onnx.save(model, str(path))
    return module, path


def torch_reference(module, T, lengths, seed=0, device="cpu"):
    """(x, [y, h_n(, c_n)]): a random input [T, B, INPUT] and what `module` computes on it
    packed with `lengths` (y padded with zeros to T)."""
    gen = torch.Generator().manual_seed(seed)
    dtype = next(module.parameters()).dtype
    x = torch.randn(T, len(lengths), INPUT, generator=gen).to(device=device, dtype=dtype)
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        x, torch.as_tensor(lengths), enforce_sorted=False)
    with torch.no_grad():
        out, state = module.to(device)(packed)
    y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)
    states = list(state) if isinstance(state, tuple) else [state]
    return x, [y] + states
