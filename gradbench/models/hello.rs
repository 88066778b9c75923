// GradBench `hello`: d/dx x².
fn square(x: f64) -> f64 {
    x * x
}
