"""Exact policy evaluation: backward induction for finite horizons, the linear system of a
stationary policy for discounted models."""
