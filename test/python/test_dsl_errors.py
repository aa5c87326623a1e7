"""Errors: bad shapes and dtypes at call time (checked in Python, before the C ABI), and
mistakes in DSL cells, which point at the user's line: shape errors while tracing, and
compiler diagnostics mapped back through the MLIR locations the DSL emits."""

from pathlib import Path

import numpy as np
import pytest

from test_dsl_common import line_of, rnn

from rnn import H, I, param, split, tanh

HERE = __file__
I_, H_ = 10, 20


@pytest.fixture(scope="module")
def gru():
    return rnn.NumpyRNN(rnn.zoo.gru, I_, H_)


@pytest.fixture(scope="module")
def lstm_bf():
    return rnn.NumpyRNN(rnn.zoo.lstm, I_, H_, num_layers=2, batch_first=True)


X = np.zeros((5, 3, I_), np.float32)


def test_input_shape(gru, lstm_bf):
    with pytest.raises(rnn.ShapeError) as e:
        gru(np.zeros((5, 3, 12), np.float32))
    assert str(e.value) == "input: expected [T, B, 10] (input_size=10), got [5, 3, 12]"
    with pytest.raises(rnn.ShapeError, match=r"input: expected \[B, T, 10\] \(input_size=10\), "
                                             r"got \[3, 5, 9\]"):
        lstm_bf(np.zeros((3, 5, 9), np.float32))
    with pytest.raises(rnn.ShapeError, match=r"or unbatched \[T, 10\], got \[2, 5, 3, 10\]"):
        gru(np.zeros((2, 5, 3, 10), np.float32))


def test_input_dtype(gru):
    with pytest.raises(TypeError, match="input: expected dtype float32, got float64"):
        gru(np.zeros((5, 3, I_)))


def test_model_dtype():
    with pytest.raises(TypeError, match="unsupported dtype 'int32'"):
        rnn.NumpyRNN(rnn.zoo.gru, I_, H_, dtype="int32")
    with pytest.raises(TypeError, match="bfloat16 is not supported by the CPU backend"):
        rnn.NumpyRNN(rnn.zoo.gru, I_, H_, dtype="bfloat16")
    with pytest.raises(NotImplementedError, match="device .tpu."):
        rnn.NumpyRNN(rnn.zoo.gru, I_, H_, device="tpu")
    with pytest.raises(ValueError, match="hidden_size must be a positive int"):
        rnn.NumpyRNN(rnn.zoo.gru, I_, 0)


def test_initial_states(gru, lstm_bf):
    with pytest.raises(rnn.ShapeError) as e:
        gru(X, np.zeros((1, 4, H_), np.float32))
    assert str(e.value) == ("initial state 'h': expected [1, 3, 20] (num_directions*num_layers"
                            "=1, batch=3, h size=20), got [1, 4, 20]")
    with pytest.raises(rnn.ShapeError, match="expected 2 initial state"):
        lstm_bf(np.zeros((3, 5, I_), np.float32), (np.zeros((2, 3, H_), np.float32),))
    with pytest.raises(TypeError, match="initial state 'c': expected dtype float32, got float64"):
        lstm_bf(np.zeros((3, 5, I_), np.float32), (None, np.zeros((2, 3, H_))))
    with pytest.raises(KeyError, match="unknown state"):
        gru(X, {"c": None})


def test_lengths(gru):
    with pytest.raises(rnn.ShapeError, match=r"lengths: expected \[3\] \(one length per batch "
                                             r"row\), got \[2\]"):
        gru(X, lengths=[1, 2])
    with pytest.raises(rnn.ShapeError, match=r"every length must be in \[0, T=5\], got 6 at "
                                             "row 1"):
        gru(X, lengths=[1, 6, 2])
    with pytest.raises(rnn.ShapeError, match="got -1 at row 0"):
        gru(X, lengths=[-1, 1, 2])


def test_bad_parameter_assignment(gru):
    good = gru.params["W_l0"]
    try:
        gru.params["W_l0"] = np.zeros((60, 11), np.float32)
        with pytest.raises(rnn.ShapeError, match=r"parameter 'W_l0': expected \[60, 10\], got "
                                                 r"\[60, 11\]"):
            gru(X)
        gru.params["W_l0"] = np.zeros((60, 10))
        with pytest.raises(TypeError, match="parameter 'W_l0': expected dtype float32, got "
                                            "float64"):
            gru(X)
    finally:
        gru.params["W_l0"] = good
    gru(X)


# ---- DSL cells ---------------------------------------------------------------------------

@rnn.cell(states=("h",))
def widening(x, h):
    W = param("W", (2 * H, I))
    y = tanh(x @ W.T)
    return y  # MARK-widening-return


def test_state_changes_shape_is_a_compile_error_at_the_users_line():
    with pytest.raises(rnn.CompileError) as e:
        rnn.NumpyRNN(widening, 4, 4)
    err = e.value
    assert isinstance(err, rnn.CellCompileError)
    line = line_of(HERE, "MARK-widening-return")
    assert err.location is not None and err.location.line == line
    assert err.location.file == HERE
    msg = str(err)
    assert f"{HERE}:{line}:" in msg
    assert "'rnn.yield' op new state #0 has type 'tensor<?x8xf32>'" in msg
    assert "return y  # MARK-widening-return" in msg  # the user's source line
    assert "state #0 of cell widening_i4 is 'h', declared [B, 4]" in msg
    assert "returns [B, 8]" in msg
    assert any(d[0] == HERE and d[1] == line and d[3] == "error" for d in err.diagnostics)


@rnn.cell(states=("h",))
def bad_bias(x, h):
    b = param("b", (3,))
    return h + b  # MARK-bad-bias


def test_broadcast_error_points_at_the_line():
    with pytest.raises(rnn.ShapeError) as e:
        rnn.NumpyRNN(bad_bias, 4, 4)
    line = line_of(HERE, "MARK-bad-bias")
    assert e.value.location.line == line and e.value.location.file == HERE
    msg = str(e.value)
    assert msg.startswith("cell bad_bias: add: shapes [B, 4] and [3] do not broadcast")
    assert f"at {HERE}:{line}" in msg and "return h + b  # MARK-bad-bias" in msg


@rnn.cell(states=("h",))
def wrong_layout(x, h):
    W = param("W", (H, I))
    return tanh(x @ W) + h  # MARK-layout


def test_matmul_layout_hint():
    with pytest.raises(rnn.ShapeError, match=r"x @ W: x is \[B, 4\] and W is \[8, 4\]; expected "
                                             r"W of shape \[4, N\] \(a PyTorch \[out, in\] "
                                             r"weight is used as x @ W.T\)") as e:
        rnn.NumpyRNN(wrong_layout, 4, 8)
    assert e.value.location.line == line_of(HERE, "MARK-layout")


@rnn.cell(states=("h",))
def uneven(x, h):
    a, b, c = split(h, 3)
    return a


def test_split_error():
    with pytest.raises(rnn.ShapeError, match=r"a size of 4 \(axis 1 of \[B, 4\]\) does not "
                                             "split into 3 equal pieces"):
        rnn.NumpyRNN(uneven, 4, 4)


def test_dsl_misuse():
    with pytest.raises(rnn.CellError, match=r"rnn.param\(\) can only be called inside a cell"):
        param("W", (3, 3))
    with pytest.raises(rnn.CellError, match="takes 2"):
        @rnn.cell(states=("h", "c"))
        def two_args(x, h):
            return h

    @rnn.cell(states=("h", "c"))
    def one_return(x, h, c):
        return h

    with pytest.raises(rnn.CellError, match=r"returned 1 value\(s\); it must return the new "
                                            r"states \(h, c\)"):
        rnn.NumpyRNN(one_return, 4, 4)

    @rnn.cell(states={"h": rnn.Dim("Q")})
    def needs_q(x, h):
        return h

    with pytest.raises(rnn.CellError, match=r"size Q is not bound .*sizes=\{'Q': \.\.\.\}"):
        rnn.NumpyRNN(needs_q, 4, 4)
    assert rnn.NumpyRNN(needs_q, 4, 4, sizes={"Q": 3}).state_names == ("h",)

    @rnn.cell(states=("h",))
    def branchy(x, h):
        if h:
            return h
        return -h

    with pytest.raises(rnn.CellError, match="no truth value"):
        rnn.NumpyRNN(branchy, 4, 4)

    @rnn.cell(states=("h",))
    def transposed_alone(x, h):
        W = param("W", (H, H))
        return h + W.T

    with pytest.raises(rnn.CellError, match="W.T can only be the right operand of @"):
        rnn.NumpyRNN(transposed_alone, 4, 4)

    @rnn.cell(states=("h",))
    def two_outputs(x, h):
        return h, h, h

    two_outputs.output_names = ("a", "b")
    with pytest.raises(rnn.CellError, match="one step output"):
        rnn.NumpyRNN(two_outputs, 4, 4)


def test_missing_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("RNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RNN_COMPILE", str(tmp_path / "no-such-rnn-compile"))
    with pytest.raises(rnn.CompileError, match="rnn-compile not found"):
        rnn.NumpyRNN(rnn.zoo.gru, I_, H_)


@pytest.mark.parametrize("lengths, message", [
    ([5, 2**70, 1], r"lengths: every length must be in \[0, T=5\], got 1180591620717411303424 "
                    r"at row 1"),
    (np.array([5, 2**63, 1], dtype=np.uint64), r"got 9223372036854775808 at row 1"),
    (["5", "2", "1"], "lengths: expected integers, got dtype <U1"),
    ("521", "lengths: expected integers, got str '521'"),
    ([True, False, True], "lengths: expected integers, got dtype bool"),
])
def test_bad_lengths_are_named(lengths, message):
    model = rnn.NumpyRNN(rnn.zoo.gru, 4, 6)
    x = np.zeros((5, 3, 4), np.float32)
    with pytest.raises((TypeError, rnn.ShapeError), match=message):
        model(x, lengths=lengths)


@pytest.mark.parametrize("value, message", [
    ("hello", "input: expected a numpy array of float32, got str"),
    (np.zeros((5, 3, 4), np.complex64), "input: expected a numpy array of float32, got dtype "
                                        "complex64"),
])
def test_bad_input_is_named(value, message):
    model = rnn.NumpyRNN(rnn.zoo.gru, 4, 6)
    with pytest.raises(TypeError, match=message):
        model(value)


def test_huge_hidden_size_is_refused_before_compiling():
    with pytest.raises(ValueError, match=r"the parameters would take .* GiB .*hidden_size="
                                         r"2147483648"):
        rnn.NumpyRNN(rnn.zoo.lstm, 4, 2**31)


def test_runtime_dtype_without_rnn_counterpart_is_named(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    path = rnn.compile_mlir(repo / "examples" / "gru.mlir", tmp_path / "gru.so")
    model = rnn.Model(path)
    args = [np.zeros((2, 3, 10), np.complex64)]
    with pytest.raises(TypeError, match=r"gru_seq: argument #0 has numpy dtype complex64"):
        model("gru_seq", *args, *[np.zeros(1, np.float32)] * 4)
