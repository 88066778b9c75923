//! Benchmarks of jitdiff against peer automatic-differentiation crates, reproducible from the
//! repository: `cargo bench -p jitdiff-peers` (first a break-even table: the calls that repay
//! jitdiff's derive + compile against the fastest peer; then criterion's groups). The peer crates (num-dual, echidna) are
//! dev-dependencies of this package's bench only; the library is empty.
