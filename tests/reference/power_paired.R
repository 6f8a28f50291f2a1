# Reference sample sizes and powers of paired designs for agentab.power, computed independently in R.
#
# Run from the repository root:  Rscript tests/reference/power_paired.R
# (needs the R package pwr: apt-get install r-cran-pwr). Writes tests/reference/power_paired.csv.
#
# What it computes (one row per case):
#   paired_t  pwr::pwr.t.test(d = d_z, type = "paired"): the paired t test on n differences, noncentral t
#             with n - 1 degrees of freedom (Cohen 1988, sec. 2.3.5). The rows give Cohen's d on the
#             runs' scale and the correlation rho between the two arms' observations of a task;
#             d_z = d / sqrt(2 (1 - rho)) is what pwr is given.
#   mcnemar   Connor (1987), Biometrics 43:207-211, written here from the published formula:
#             n = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2, psi = p10 + p01 the share of
#             discordant pairs, delta = p01 - p10 the difference of the two rates, z_a = z_{1 - alpha/2}
#             (two-sided) or z_{1 - alpha}; power inverts it: Phi((|delta| sqrt(n) - z_a sqrt(psi)) /
#             sqrt(psi - delta^2)). Beside it, the power of the tests themselves, by exact enumeration:
#             the number of discordant pairs D ~ Binomial(n, psi) and, given D = k, the candidate-only
#             pairs X ~ Binomial(k, p01 / psi);
#               power_exact_binomial  the conditional exact McNemar test (binomial test of X given k at 1/2;
#                                     two-sided p = min(1, 2 min(P(X' <= x), P(X' >= x))));
#               power_exact_chisq     the McNemar z test without continuity correction,
#                                     (2x - k) / sqrt(k) beyond the normal critical value (k = 0: no rejection),
#             the test Connor's formula approximates.
#
# Columns of the CSV (lines starting with "#" are comments: read with comment = "#"):
#   case          row number
#   test          "paired_t" | "mcnemar"
#   solve         "n": the sample size at target_power; "power": the power at the given n
#   alternative   agentab's (scipy's) words: "two-sided", "greater" (candidate higher), "less"
#   d             paired_t: Cohen's d on the runs' scale (agentab's effect); empty for mcnemar
#   correlation   paired_t: rho between the arms' observations of a task; empty for mcnemar
#   d_z           paired_t: d / sqrt(2 (1 - rho)), the effect size given to pwr.t.test
#   p_base_only   mcnemar: p10, the share of pairs only the baseline arm succeeds on
#   p_cand_only   mcnemar: p01, the share of pairs only the candidate arm succeeds on
#   discordant    mcnemar: psi = p10 + p01 (agentab's discordant=)
#   effect        mcnemar: delta = p01 - p10 (agentab's effect); paired_t: d again
#   alpha         significance level (of the two-sided test for "two-sided")
#   target_power  solve == "n": the requested power
#   n             solve == "n": ceiling(n_exact), whole pairs (tasks); solve == "power": the pairs given
#   n_exact       solve == "n": the unrounded pairs (pwr's n; Connor's n)
#   power         the formula's power at n (pwr.t.test's; Connor's inverted)
#   power_exact_binomial, power_exact_chisq   mcnemar: the tests' power at n by enumeration

suppressPackageStartupMessages(library(pwr))

pwr_alt <- function(a) switch(a, "two-sided" = "two.sided", "greater" = "greater", "less" = "less")
crit <- function(alpha, a) if (a == "two-sided") qnorm(1 - alpha / 2) else qnorm(1 - alpha)

connor_n <- function(delta, psi, alpha, power, a) {
  (crit(alpha, a) * sqrt(psi) + qnorm(power) * sqrt(psi - delta^2))^2 / delta^2
}
connor_power <- function(delta, psi, n, alpha, a) {
  shift <- if (a == "two-sided") abs(delta) else if (a == "greater") delta else -delta
  pnorm((shift * sqrt(n) - crit(alpha, a) * sqrt(psi)) / sqrt(psi - delta^2))
}

# Power of the exact conditional and the uncorrected z McNemar tests on n pairs, by enumeration.
mcnemar_exact <- function(p10, p01, n, alpha, a) {
  psi <- p10 + p01
  z <- crit(alpha, a)
  out <- c(binomial = 0, chisq = 0)
  for (k in 1:n) {
    wk <- dbinom(k, n, psi)
    x <- 0:k
    px <- dbinom(x, k, p01 / psi)
    lower <- pbinom(x, k, 0.5)                         # P(X' <= x)
    upper <- pbinom(x - 1, k, 0.5, lower.tail = FALSE)  # P(X' >= x)
    p <- switch(a, "two-sided" = pmin(1, 2 * pmin(lower, upper)), "greater" = upper, "less" = lower)
    stat <- (2 * x - k) / sqrt(k)
    reject_z <- switch(a, "two-sided" = abs(stat) > z, "greater" = stat > z, "less" = stat < -z)
    out["binomial"] <- out["binomial"] + wk * sum(px[p < alpha])
    out["chisq"] <- out["chisq"] + wk * sum(px[reject_z])
  }
  out
}

rows <- list()
add <- function(...) rows[[length(rows) + 1]] <<- data.frame(...)
na <- NA_real_

# ---- paired t: sample sizes over a grid of (d, rho) x alpha x power x alternative
dr <- list(c(0.2, 0.5), c(0.3, 0.6), c(0.5, 0.5), c(0.5, 0.0), c(0.8, 0.3), c(0.3, -0.2), c(0.15, 0.9))
for (x in dr) for (alpha in c(0.05, 0.01)) for (pw in c(0.8, 0.9)) for (a in c("two-sided", "greater")) {
  dz <- x[1] / sqrt(2 * (1 - x[2]))
  r <- pwr.t.test(d = dz, sig.level = alpha, power = pw, type = "paired", alternative = pwr_alt(a))
  n <- ceiling(r$n)
  p_at <- pwr.t.test(n = n, d = dz, sig.level = alpha, type = "paired", alternative = pwr_alt(a))$power
  add(test = "paired_t", solve = "n", alternative = a, d = x[1], correlation = x[2], d_z = dz, p_base_only = na,
      p_cand_only = na, discordant = na, effect = x[1], alpha = alpha, target_power = pw, n = n, n_exact = r$n,
      power = p_at, power_exact_binomial = na, power_exact_chisq = na)
}
# ---- paired t: powers at given n, including "less" with a negative d
for (x in dr[1:5]) for (n in c(10, 30, 80)) for (a in c("two-sided", "greater", "less")) {
  d <- if (a == "less") -x[1] else x[1]
  dz <- d / sqrt(2 * (1 - x[2]))
  p <- pwr.t.test(n = n, d = dz, sig.level = 0.05, type = "paired", alternative = pwr_alt(a))$power
  add(test = "paired_t", solve = "power", alternative = a, d = d, correlation = x[2], d_z = dz, p_base_only = na,
      p_cand_only = na, discordant = na, effect = d, alpha = 0.05, target_power = na, n = n, n_exact = na,
      power = p, power_exact_binomial = na, power_exact_chisq = na)
}

# ---- McNemar (Connor 1987): sample sizes, with the exact power of the tests at that n
cells <- list(c(0.05, 0.15), c(0.10, 0.20), c(0.15, 0.35), c(0.05, 0.10), c(0.20, 0.30), c(0.25, 0.10))
for (x in cells) for (alpha in c(0.05, 0.01)) for (pw in c(0.8, 0.9)) for (a in c("two-sided", "one-sided")) {
  delta <- x[2] - x[1]
  psi <- x[1] + x[2]
  if (a == "one-sided") a <- if (delta > 0) "greater" else "less"
  nx <- connor_n(delta, psi, alpha, pw, a)
  n <- ceiling(nx)
  exact <- if (alpha == 0.05) mcnemar_exact(x[1], x[2], n, alpha, a) else c(binomial = na, chisq = na)
  add(test = "mcnemar", solve = "n", alternative = a, d = na, correlation = na, d_z = na, p_base_only = x[1],
      p_cand_only = x[2], discordant = psi, effect = delta, alpha = alpha, target_power = pw, n = n, n_exact = nx,
      power = connor_power(delta, psi, n, alpha, a), power_exact_binomial = exact[["binomial"]],
      power_exact_chisq = exact[["chisq"]])
}
# ---- McNemar: powers at given n, formula and exact
for (x in cells[1:4]) for (n in c(40, 150, 400)) {
  delta <- x[2] - x[1]
  psi <- x[1] + x[2]
  exact <- mcnemar_exact(x[1], x[2], n, 0.05, "two-sided")
  add(test = "mcnemar", solve = "power", alternative = "two-sided", d = na, correlation = na, d_z = na,
      p_base_only = x[1], p_cand_only = x[2], discordant = psi, effect = delta, alpha = 0.05, target_power = na,
      n = n, n_exact = na, power = connor_power(delta, psi, n, 0.05, "two-sided"),
      power_exact_binomial = exact[["binomial"]], power_exact_chisq = exact[["chisq"]])
}

out <- do.call(rbind, rows)
out <- cbind(case = seq_len(nrow(out)), out)
path <- "tests/reference/power_paired.csv"
header <- c(
  sprintf("# generated by tests/reference/power_paired.R with %s, pwr %s", R.version.string, packageVersion("pwr")),
  "# columns are documented in tests/reference/power_paired.R"
)
writeLines(header, path)
suppressWarnings(write.table(out, path, sep = ",", row.names = FALSE, quote = FALSE,
                             append = TRUE, na = ""))
cat(sprintf("wrote %d rows to %s\n", nrow(out), path))
