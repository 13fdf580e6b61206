//! nightjar SDK
