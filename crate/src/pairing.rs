//! pairing (stub; being written).
