# Reference p-values for agentab.stats' studentized permutation tests, computed in R independently of agentab.
#
# 1. "ordinal": Brunner-Munzel statistic (Brunner & Munzel 2000, Biometrical Journal 42:17-25), written here
#    from its definition with midranks and placements, over ALL reassignments of the runs between arms (combn):
#    the exact studentized permutation test of Neubert & Brunner (2007, CSDA 51:5192-5204).
# 2. "welch": Welch's t (stats::t.test, var.equal = FALSE) of task means over ALL reassignments of whole tasks.
# 3. "paired": all 2^T sign flips of the per-task differences d (expand.grid), with agentab's documented
#    tie-breaking task weights u = 1 + 1e-6 * rank(task mean over both arms) / T (average ranks), statistic
#    mean(s * u * d); under sign flips the task-level t statistic is an increasing function of it. The
#    columns p_plain_* give coin::symmetry_test's exact p-values of the plain sum (Hothorn, Hornik, van de
#    Wiel & Zeileis 2006): breaking ties can only lower the p-value.
# Conventions of agentab: 0/0 is 0, x/0 is +-Inf; ties within a relative 1e-9 count as ties; "greater" means
# the candidate (y) tends higher. One-sided p-values in both directions.
# Regenerate: Rscript tests/reference/studentized_permutation.R > tests/reference/studentized_permutation.csv
suppressPackageStartupMessages(library(coin))

ratio <- function(num, den) if (den == 0) { if (num == 0) 0 else sign(num) * Inf } else num / den

bm <- function(x, y) {
  n1 <- length(x); n2 <- length(y); N <- n1 + n2
  r <- rank(c(x, y)); r1 <- r[1:n1]; r2 <- r[(n1 + 1):N]
  p1 <- r1 - rank(x); p2 <- r2 - rank(y)  # placements
  s1 <- sum((p1 - mean(p1))^2) / (n1 - 1)
  s2 <- sum((p2 - mean(p2))^2) / (n2 - 1)
  ratio(mean(r2) - mean(r1), N * sqrt(s1 / (n1 * n2^2) + s2 / (n2 * n1^2)))
}

welch <- function(x, y) {
  v <- var(x) / length(x) + var(y) / length(y)
  ratio(mean(y) - mean(x), sqrt(v))
}

tails <- function(null, observed) {
  tol <- 1e-9 * max(1, abs(observed))
  if (is.infinite(observed)) {
    c(mean(null >= observed), mean(null <= observed))
  } else {
    c(mean(null >= observed - tol), mean(null <= observed + tol))
  }
}

reassign <- function(x, y, stat) {
  pooled <- c(x, y); n <- length(pooled); ny <- length(y)
  splits <- combn(n, ny)
  null <- apply(splits, 2, function(idx) stat(pooled[-idx], pooled[idx]))
  tails(null, stat(x, y))
}

fmt <- function(v) paste(v, collapse = " ")
cat("case,design,x,y,p_greater,p_less,p_plain_greater,p_plain_less\n")
ordinal <- list(
  list(x = c(0, 1, 1, 2, 2), y = c(1, 2, 3, 3)),
  list(x = c(0, 0, 1, 1, 1, 2), y = c(1, 1, 2, 2, 3, 3)),
  list(x = c(2, 2, 2, 3), y = c(0, 1, 2, 2, 3)),
  list(x = c(0, 1, 2, 3, 3, 3), y = c(0, 0, 1, 2, 3)),
  list(x = c(1, 1, 1, 1, 2), y = c(1, 1, 2, 2, 2, 3, 3)),
  list(x = c(0, 0, 0, 1), y = c(0, 0, 1, 1)),
  list(x = c(1.5, 3.0, 4.2, 7.0, 8.5, 9.1), y = c(2.0, 5.5, 6.0, 9.9, 10.0, 11.0, 12.5))
)
i <- 0
for (cs in ordinal) {
  i <- i + 1
  p <- reassign(cs$x, cs$y, bm)
  cat(sprintf("%d,ordinal,%s,%s,%.15g,%.15g,,\n", i, fmt(cs$x), fmt(cs$y), p[1], p[2]))
}
# Task means of a rate over 3 seeds (multiples of 1/3) and of a continuous metric; different tasks per arm.
welch_cases <- list(
  list(x = c(0, 1/3, 1/3, 2/3, 1), y = c(1/3, 2/3, 2/3, 1, 1, 1)),
  list(x = c(0.1, 0.4, 0.45, 0.9, 1.3, 2.2), y = c(0.5, 0.52, 0.58, 0.61, 0.7)),
  list(x = c(0, 0, 0, 1/3, 1), y = c(0, 1/3, 1/3, 2/3, 2/3, 1, 1))
)
for (cs in welch_cases) {
  i <- i + 1
  p <- reassign(cs$x, cs$y, welch)
  cat(sprintf("%d,welch,%s,%s,%.15g,%.15g,,\n", i, fmt(signif(cs$x, 17)), fmt(signif(cs$y, 17)), p[1], p[2]))
}
# Paired: per-task success counts out of 3 seeds (baseline x, candidate y); 14 and 18 tasks.
paired_cases <- list(
  list(x = c(0, 1, 2, 3, 1, 0, 2, 2, 1, 3, 0, 1, 2, 1), y = c(1, 1, 3, 3, 2, 1, 2, 3, 2, 3, 0, 2, 3, 1)),
  list(x = c(3, 3, 0, 0, 1, 2, 1, 1, 2, 0, 3, 1, 2, 0, 1, 2, 3, 1), y = c(3, 2, 0, 1, 2, 2, 1, 2, 3, 1, 3, 2, 2, 0, 2, 3, 3, 1))
)
for (cs in paired_cases) {
  i <- i + 1
  n <- length(cs$x)
  d <- data.frame(v = c(cs$y, cs$x), arm = factor(rep(c("cand", "base"), each = n), levels = c("cand", "base")),
                  task = factor(rep(seq_len(n), 2)))
  pg <- pvalue(symmetry_test(v ~ arm | task, data = d, distribution = "exact", alternative = "greater"))
  pl <- pvalue(symmetry_test(v ~ arm | task, data = d, distribution = "exact", alternative = "less"))
  diff <- (cs$y - cs$x) / 3
  u <- 1 + 1e-6 * rank((cs$x + cs$y) / 6) / n
  signs <- as.matrix(expand.grid(rep(list(c(1, -1)), n)))
  null <- as.vector(signs %*% (diff * u)) / n
  observed <- mean(diff * u)
  tol <- 1e-12 * max(abs(diff))
  cat(sprintf("%d,paired,%s,%s,%.15g,%.15g,%.15g,%.15g\n", i, fmt(cs$x), fmt(cs$y),
              mean(null >= observed - tol), mean(null <= observed + tol), pg, pl))
}
