//! Synthetic NTFF writer (placeholder).
