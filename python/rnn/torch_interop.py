"""PyTorch interop: rnn.RNN from / to torch.nn.LSTM, GRU and RNN. torch is imported here
only, and only when one of these functions is called.

Name mapping (layer k, `_reverse` for the backward direction), as torch's state_dict:
    weight_ih_l{k}  <-> W_l{k}        weight_hh_l{k} <-> U_l{k}
    bias_ih_l{k}    <-> b_W_l{k}      bias_hh_l{k}   <-> b_U_l{k}
    weight_hr_l{k}  <-> W_hr_l{k}     (LSTM with proj_size: rnn.zoo.lstmp)
A torch module built with bias=False loads zero biases and exports none.
"""

__all__ = ["from_torch", "to_torch", "cell_for_torch"]


def cell_for_torch(module):
    """(zoo cell, extra RNN kwargs) for a torch.nn.LSTM / GRU / RNN instance."""
    from . import zoo
    import torch
    if isinstance(module, torch.nn.LSTM):
        proj = int(getattr(module, "proj_size", 0) or 0)
        if proj:
            return zoo.lstmp, {"proj_size": proj}
        return zoo.lstm, {}
    if isinstance(module, torch.nn.GRU):
        return zoo.gru, {}
    if isinstance(module, torch.nn.RNN):
        nl = getattr(module, "nonlinearity", "tanh")
        if nl == "tanh":
            return zoo.rnn_tanh, {}
        if nl == "relu":
            return zoo.rnn_relu, {}
        raise ValueError(f"torch.nn.RNN with nonlinearity {nl!r} has no rnn cell")
    raise TypeError(f"from_torch: expected a torch.nn.LSTM, GRU or RNN, got "
                    f"{type(module).__name__}")


def _dtype_of(module):
    import torch
    p = next(iter(module.parameters()), None)
    if p is None or p.dtype == torch.float32:
        return "float32"
    if p.dtype == torch.float64:
        return "float64"
    raise TypeError(f"from_torch: parameters of dtype {p.dtype} are not supported on the CPU "
                    "backend; convert the module with .float() or .double() (or pass dtype=)")


def from_torch(cls, module, dtype=None, optimize=True):
    cell, extra = cell_for_torch(module)
    model = cls(cell, int(module.input_size), int(module.hidden_size),
                num_layers=int(module.num_layers), bidirectional=bool(module.bidirectional),
                batch_first=bool(module.batch_first), dtype=dtype or _dtype_of(module),
                optimize=optimize, **extra)
    sd = module.state_dict()
    if not getattr(module, "bias", True):
        model._torch_bias = False
        for key, array in model.params.items():
            name = key.rsplit("_l", 1)[0]
            if cell.torch["names"][name].startswith("bias"):
                array[...] = 0
    model.load_state_dict(sd)
    return model


def to_torch(model):
    import torch
    spec = model._spec
    t = spec.torch
    if not t:
        raise TypeError(f"cell {spec.cell_name} has no PyTorch counterpart (only rnn_tanh, "
                        "rnn_relu, lstm, lstmp and gru do)")
    kw = dict(num_layers=spec.num_layers, bidirectional=spec.bidirectional,
              batch_first=spec.batch_first, bias=model._torch_bias)
    if t["module"] == "LSTM":
        if t.get("proj"):
            kw["proj_size"] = int(spec.sizes[t["proj"]])
        module = torch.nn.LSTM(spec.input_size, spec.hidden_size, **kw)
    elif t["module"] == "GRU":
        module = torch.nn.GRU(spec.input_size, spec.hidden_size, **kw)
    else:
        module = torch.nn.RNN(spec.input_size, spec.hidden_size,
                              nonlinearity=t["nonlinearity"], **kw)
    module = module.to(torch.float64 if spec.dtype == "f64" else torch.float32)
    module.load_state_dict(model.state_dict(torch=True))
    if getattr(model, "is_cuda", False):
        module = module.to(model.device)
    return module
