//! Unit tests of the judgements, written below.
