// GradBench `lstm`: ADBench's LSTM text model, the mean log-likelihood of each next character.
// `main` is 2l x 4b (per layer: weights then biases of the forget, input, output and change
// gates), `extra` 3 x b (input weight, output weight, output bias), `state0` 2l x b (per layer:
// hidden then cell), `seq` c x b. `state` (2 l b) and `ypred` (b) are work space.
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn lstm(main: &[f64], extra: &[f64], state0: &[f64], seq: &[f64], l: usize, b: usize, state: &mut [f64], ypred: &mut [f64]) -> f64 {
    let c = seq.len() / b;
    for i in 0..2 * l * b {
        state[i] = state0[i];
    }
    let mut total = 0.0;
    let mut count = 0;
    for t in 0..c - 1 {
        for i in 0..b {
            ypred[i] = seq[t * b + i] * extra[i];
        }
        for layer in 0..l {
            let p = 8 * b * layer;
            let s = 2 * b * layer;
            for i in 0..b {
                let input = if layer == 0 { ypred[i] } else { state[s - 2 * b + i] };
                let forget = sigmoid(input * main[p + i] + main[p + 4 * b + i]);
                let ingate = sigmoid(state[s + i] * main[p + b + i] + main[p + 5 * b + i]);
                let outgate = sigmoid(input * main[p + 2 * b + i] + main[p + 6 * b + i]);
                let change = (state[s + i] * main[p + 3 * b + i] + main[p + 7 * b + i]).tanh();
                let cell = state[s + b + i] * forget + ingate * change;
                state[s + b + i] = cell;
                state[s + i] = outgate * cell.tanh();
            }
        }
        let last = 2 * b * (l - 1);
        let mut sum = 0.0;
        for i in 0..b {
            ypred[i] = state[last + i] * extra[b + i] + extra[2 * b + i];
            sum += ypred[i].exp();
        }
        let lse = (sum + 2.0).ln();
        for i in 0..b {
            total += seq[(t + 1) * b + i] * (ypred[i] - lse);
        }
        count += b;
    }
    -total / count as f64
}
