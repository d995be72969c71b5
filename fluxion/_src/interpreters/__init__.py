"""Transformations as interpreters: ad (jvp/linearize/transpose), batching (vmap), partial_eval (staging)."""
