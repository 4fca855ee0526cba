"""One engine iteration as a chunked-prefill scheduler builds it: decoding sequences and a prompt chunk in one pass.

An iteration of vLLM or SGLang with chunked prefill flattens every scheduled token into one batch: ``b`` sequences
decoding ``q`` tokens each (1, or gamma + 1 when verifying) over ``L`` cached tokens, beside ``c`` tokens of one prompt
whose first ``p0`` tokens earlier iterations already prefilled.  The weight GEMMs run once over all ``b * q + c``
tokens; attention runs per sequence (engines use one variable-length kernel; here SDPA is called once for the decoding
sequences and once for the chunk, causal over its prefix and itself); the LM head runs only at the tokens the engine
samples from: every decoding token and the chunk's last (vLLM V1 computes logits at each request's last scheduled
token and discards a partial prompt's sample).

:class:`MixedPass` holds the static inputs and a KV cache for the chunk's sequence beside the model's own cache for the
decoding ones, so that a pass can be captured in a CUDA graph.  Its layers come in three pieces
(:meth:`MixedPass.before_attention`, :meth:`MixedPass.attention`, :meth:`MixedPass.after_attention`), so a caller can
capture the dense parts and run attention eagerly between them, as vLLM's ``CUDAGraphMode.PIECEWISE`` does
(scripts/gpu_iteration_steps.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from specsim.harness.model import DecoderTimingModel, _rotate, shared_length_mask

__all__ = ["MixedPass"]


class MixedPass:
    """Static inputs and caches for one iteration of ``b`` decoding sequences (``q`` tokens over ``L`` cached) and one
    prompt chunk of ``c`` tokens at prompt position ``p0``; call it to run the pass (logits at the sampled tokens)."""

    def __init__(self, model: DecoderTimingModel, b: int, q: int, L: int, c: int, p0: int, seed: int = 0) -> None:
        if b < 0 or c < 0 or b + c == 0 or (b and q < 1) or L < 0 or p0 < 0:
            raise ValueError(
                f"a pass needs b >= 0 decoding sequences and a chunk of c >= 0 tokens, not both 0: {b=} {c=}"
            )
        self.model, self.b, self.q, self.L, self.c, self.p0 = model, b, q, L, c, p0
        dev, shape = model.device, model.shape
        gen = torch.Generator(device="cpu").manual_seed(seed)
        self.n_dec = b * q
        if b:
            model.allocate(b, L + q)
            self.dec_tokens = torch.randint(0, shape.vocab_size, (b, q), generator=gen).to(dev)
            pos = torch.full((b,), L, dtype=torch.long, device=dev)[:, None] + torch.arange(q, device=dev)[None, :]
            self.dec_positions, self.dec_rows = pos, torch.arange(b, device=dev)[:, None]
            self.dec_cos, self.dec_sin = self._angles(pos)
            self.dec_mask = shared_length_mask(q, L + q)
        if c:
            cache = (shape.n_layers, 1, model.n_kv, p0 + c, model.head_dim)
            self.k_chunk = torch.zeros(cache, dtype=model.dtype, device=dev)
            self.v_chunk = torch.zeros(cache, dtype=model.dtype, device=dev)
            self.chunk_tokens = torch.randint(0, shape.vocab_size, (1, c), generator=gen).to(dev)
            pos = p0 + torch.arange(c, device=dev)[None, :]
            self.chunk_positions = pos
            self.chunk_cos, self.chunk_sin = self._angles(pos)
            self.chunk_mask = shared_length_mask(c, p0 + c) if c > 1 else None
        # the rows the LM head reads: every decoding token and the chunk's last
        rows = list(range(self.n_dec)) + ([self.n_dec + c - 1] if c else [])
        self.sampled = torch.tensor(rows, dtype=torch.long, device=dev)
        self.tokens = torch.cat(
            ([self.dec_tokens.reshape(-1)] if b else []) + ([self.chunk_tokens.reshape(-1)] if c else [])
        )
        self.x = None  # the running activations, (b * q + c, d)
        self.qh = self.attn = None

    def _angles(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.model
        angles = positions[..., None].float() * m.inv_freq
        return torch.cos(angles)[:, :, None, :].to(m.dtype), torch.sin(angles)[:, :, None, :].to(m.dtype)

    # -- the three pieces of a layer ---------------------------------------------------------------------------------
    def before_attention(self, index: int) -> None:
        """Norm, QKV projection, rotary embedding and the cache writes of layer ``index``."""
        m, layer = self.model, self.model.layers[index]
        hd, b, q, c, n = m.head_dim, self.b, self.q, self.c, self.n_dec
        h = m._norm(self.x, layer.attn_norm)
        qkv = F.linear(h, layer.wqkv, layer.bqkv)
        qh, kh, vh = qkv.split([m.n_heads * hd, m.n_kv * hd, m.n_kv * hd], dim=-1)
        parts = []
        if b:
            qd = _rotate(qh[:n].view(b, q, m.n_heads, hd), self.dec_cos, self.dec_sin)
            kd = _rotate(kh[:n].view(b, q, m.n_kv, hd), self.dec_cos, self.dec_sin)
            m.k_cache[index, self.dec_rows, :, self.dec_positions] = kd
            m.v_cache[index, self.dec_rows, :, self.dec_positions] = vh[:n].view(b, q, m.n_kv, hd)
            parts.append(qd)
        if c:
            qc = _rotate(qh[n:].view(1, c, m.n_heads, hd), self.chunk_cos, self.chunk_sin)
            kc = _rotate(kh[n:].view(1, c, m.n_kv, hd), self.chunk_cos, self.chunk_sin)
            self.k_chunk[index, 0, :, self.p0 : self.p0 + c] = kc[0].transpose(0, 1)
            self.v_chunk[index, 0, :, self.p0 : self.p0 + c] = vh[n:].view(c, m.n_kv, hd).transpose(0, 1)
            parts.append(qc)
        self.qh = parts

    def attention(self, index: int) -> None:
        """Attention of layer ``index``: the decoding sequences over their caches, the chunk over its prefix and itself."""
        m, out = self.model, []
        parts = list(self.qh)
        if self.b:
            span = self.L + self.q
            keys, values = m.k_cache[index, : self.b, :, :span], m.v_cache[index, : self.b, :, :span]
            out.append(m._attend(parts.pop(0), keys, values, self.dec_mask).reshape(self.n_dec, -1))
        if self.c:
            span = self.p0 + self.c
            out.append(
                m._attend(
                    parts.pop(0), self.k_chunk[index, :, :, :span], self.v_chunk[index, :, :, :span], self.chunk_mask
                ).reshape(self.c, -1)
            )
        self.attn = out[0] if len(out) == 1 else torch.cat(out)

    def after_attention(self, index: int) -> None:
        """Output projection, residual, MLP and residual of layer ``index``."""
        m, layer = self.model, self.model.layers[index]
        x = self.x + F.linear(self.attn, layer.wo)
        h = m._norm(x, layer.mlp_norm)
        gate, up = F.linear(h, layer.w_gate_up).chunk(2, dim=-1)
        self.x = x + F.linear(F.silu(gate) * up, layer.w_down)

    def embed(self) -> None:
        self.x = self.model.embed[self.tokens]

    def logits(self) -> torch.Tensor:
        m = self.model
        return F.linear(m._norm(self.x[self.sampled], m.final_norm), m.lm_head)

    @torch.inference_mode()
    def __call__(self) -> torch.Tensor:
        """The whole pass: logits (b * q + 1 rows with a chunk, b * q without) at the sampled tokens."""
        self.embed()
        for index in range(len(self.model.layers)):
            self.before_attention(index)
            self.attention(index)
            self.after_attention(index)
        return self.logits()
