//! A two-layer perceptron `I -> H -> 1` with tanh hidden units; the loss is the mean squared
//! error over a batch (as `examples/ir/mlp.ir`, with `b2` a scalar here).

/// `w1` is `H x I` row-major with `H = b1.len()`, `w2` has `H` entries, `x` is `B x I` with
/// `B = y.len()`.
pub fn mlp(w1: &[f64], b1: &[f64], w2: &[f64], b2: f64, x: &[f64], y: &[f64]) -> f64 {
    let hidden = b1.len();
    let inputs = w1.len() / hidden;
    let mut sse = 0.0;
    for (b, &target) in y.iter().enumerate() {
        let mut prediction = b2;
        for h in 0..hidden {
            let mut pre_activation = b1[h];
            for i in 0..inputs {
                pre_activation += w1[h * inputs + i] * x[b * inputs + i];
            }
            prediction += w2[h] * pre_activation.tanh();
        }
        let error = prediction - target;
        sse += error * error;
    }
    sse / y.len() as f64
}
