//! synth (stub; being written).
