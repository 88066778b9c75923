// GradBench `kmeans`: Σ over points of the squared distance to the nearest centroid.
fn kmeans(points: &[f64], centroids: &[f64], d: usize) -> f64 {
    let n = points.len() / d;
    let k = centroids.len() / d;
    let mut cost = 0.0;
    for i in 0..n {
        let mut closest = f64::INFINITY;
        for j in 0..k {
            let mut dist = 0.0;
            for l in 0..d {
                let e = points[i * d + l] - centroids[j * d + l];
                dist += e * e;
            }
            if dist < closest {
                closest = dist;
            }
        }
        cost += closest;
    }
    cost
}
