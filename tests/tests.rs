//! Integration tests: the real binary, real files, real processes. One test
//! binary; each module covers one area and names the rule it protects.

mod util;

mod suite;
