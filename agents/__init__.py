"""Learned schedulers: stable-baselines3 training and evaluation scripts (needs the ``rl`` extra)."""
