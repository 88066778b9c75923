//! Benchmarks of jitdiff against peer automatic-differentiation crates, reproducible from the
//! repository: `cargo bench -p jitdiff-peers`. The peer crates (num-dual, echidna) are
//! dev-dependencies of this package's bench only; the library is empty.
