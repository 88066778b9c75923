// GradBench `det`: the determinant by expansion along the first row of minors, recursively,
// as GradBench's reference does. `r` and `c` (ℓ + 1 entries each) are its linked lists of the
// rows and columns still in the minor; the subset has only `f64` slices, so they hold the
// indices as floats (`as usize` reads them back).
fn det_of_minor(a: &[f64], n: usize, m: usize, r: &mut [f64], c: &mut [f64]) -> f64 {
    let r0 = r[n] as usize;
    let mut cj = c[n] as usize;
    if m == 1 {
        return a[r0 * n + cj];
    }
    let mut det = 0.0;
    let mut positive = true;
    r[n] = r[r0];
    let mut cj1 = n;
    for _j in 0..m {
        let m0j = a[r0 * n + cj];
        c[cj1] = c[cj];
        let sub = det_of_minor(a, n, m - 1, r, c);
        c[cj1] = cj as f64;
        if positive {
            det += m0j * sub;
        } else {
            det -= m0j * sub;
        }
        cj1 = cj;
        cj = c[cj] as usize;
        positive = !positive;
    }
    r[n] = r0 as f64;
    det
}

fn det(a: &[f64], ell: usize, r: &mut [f64], c: &mut [f64]) -> f64 {
    for i in 0..ell {
        r[i] = (i + 1) as f64;
        c[i] = (i + 1) as f64;
    }
    r[ell] = 0.0;
    c[ell] = 0.0;
    det_of_minor(a, ell, ell, r, c)
}
