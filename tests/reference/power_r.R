# Reference sample sizes and powers for agentab.power, computed independently in R.
#
# What it computes (one row per case in tests/reference/power_r.csv):
#   binary     pwr::pwr.2p.test(h = ES.h(p2, p1), ...)  two proportions, arcsine
#              transformation / Cohen's h (Cohen 1988, ch. 6); p1 = baseline success
#              rate, p2 = p1 + effect.
#   continuous pwr::pwr.t.test(d, ..., type = "two.sample")  two-sample t test with
#              the noncentral t distribution, Cohen's d (Cohen 1988, ch. 2).
#   ordinal    Hmisc::posamsize / Hmisc::popower  proportional-odds (Wilcoxon) test,
#              Whitehead (1993) Stat Med 12:2257-2271, 1:1 allocation, two-sided only
#              (the Hmisc functions have no one-sided option).
#
# Columns of the CSV (lines starting with "#" are comments: read with comment = "#"):
#   case            row number
#   kind            "binary" | "continuous" | "ordinal" (agentab's kind)
#   r_function      the R function that produced the reference value
#   solve           "n": solve for the sample size at target_power;
#                   "power": power at the given n_per_arm
#   alternative     agentab / statsmodels names: "two-sided", "larger", "smaller"
#                   (pwr's "greater" = "larger", pwr's "less" = "smaller")
#   baseline        binary: p1; ordinal: baseline level shares p0, worst..best,
#                   "|"-joined; continuous: empty
#   effect          binary: absolute change p2 - p1; continuous: Cohen's d;
#                   ordinal: odds ratio (> 1 moves mass to higher / better levels)
#   es              the standardised effect R was given: h = ES.h(p2, p1), d, or log(OR)
#   pbar            ordinal only: level shares averaged over the two arms, "|"-joined,
#                   exactly what was passed to posamsize / popower
#   alpha           significance level (two-sided alpha for "two-sided")
#   target_power    solve == "n": the requested power; empty otherwise
#   n_per_arm       solve == "power": runs per arm the power is computed at;
#                   solve == "n": ceiling(n_per_arm_exact), the rounded size at which
#                   power_r is reported
#   n_total_r       ordinal only: posamsize's total N (solve == "n") or the total N
#                   2 * n_per_arm passed to popower (solve == "power")
#   n_per_arm_exact solve == "n": unrounded n per arm (pwr: uniroot root, default
#                   tolerance ~1.2e-4; ordinal: posamsize total / 2)
#   power_r         power at n_per_arm from the R function (pwr.*.test with n given;
#                   popower with n = 2 * n_per_arm)
#   power_whitehead ordinal only: the same Whitehead power with V = N (1 - sum pbar^3) / 12
#                   (the variance posamsize inverts), i.e. pnorm(|log OR| sqrt(V) - z_{1-a/2});
#                   popower instead uses V = n1 n2 N / (3 (N + 1)^2) (1 - sum pbar^3),
#                   which is smaller by the factor N^2 / (N + 1)^2. Like popower and
#                   posamsize it counts only the tail in the effect's direction.
#   power_whitehead_two_tail  ordinal only: power_whitehead plus the far tail,
#                   pnorm(-|log OR| sqrt(V) - z_{1-a/2}), i.e. P(|Z| > z_{1-a/2}) for the
#                   same V (the convention of pwr.2p.test's two-sided power).
#
# Candidate level shares for the ordinal cases: gamma_j = P(Y <= j), j < K, for the
# baseline; candidate cumulative = plogis(qlogis(gamma_j) - log(OR)); candidate shares
# = diff(c(0, gamma', 1)); pbar = (p0 + p1) / 2.
#
# Re-run from the repository root (needs the CRAN packages pwr and Hmisc):
#   Rscript tests/reference/power_r.R
# The R and package versions used are written into the CSV's first comment line.

suppressPackageStartupMessages({
  library(pwr)
  library(Hmisc)
})

out_file <- file.path("tests", "reference", "power_r.csv")
if (!dir.exists(dirname(out_file))) stop("run from the repository root: Rscript tests/reference/power_r.R")

pwr_alt <- c("two-sided" = "two.sided", "larger" = "greater", "smaller" = "less")
fmt <- function(x) if (is.null(x) || length(x) == 0 || is.na(x[1])) "" else sprintf("%.15g", x)
join <- function(p) paste(sprintf("%.15g", p), collapse = "|")

rows <- list()
add <- function(...) rows[[length(rows) + 1]] <<- list(...)

## binary: pwr.2p.test with h = ES.h(p2, p1) ------------------------------------------
binary_n <- list(  # p1, effect, alpha, power, alternative
  list(0.50, 0.10, 0.05, 0.80, "two-sided"),
  list(0.30, 0.15, 0.05, 0.90, "two-sided"),
  list(0.70, 0.10, 0.01, 0.80, "two-sided"),
  list(0.40, -0.20, 0.01, 0.90, "two-sided"),
  list(0.85, 0.10, 0.10, 0.95, "two-sided"),
  list(0.20, 0.05, 0.05, 0.80, "larger"),
  list(0.10, 0.20, 0.025, 0.80, "larger"),
  list(0.60, -0.10, 0.05, 0.80, "smaller")
)
for (cs in binary_n) {
  p1 <- cs[[1]]; eff <- cs[[2]]; a <- cs[[3]]; pw <- cs[[4]]; alt <- cs[[5]]
  h <- ES.h(p1 + eff, p1)
  n <- pwr.2p.test(h = h, sig.level = a, power = pw, alternative = pwr_alt[[alt]])$n
  nc <- ceiling(n)
  add(kind = "binary", r_function = "pwr.2p.test", solve = "n", alternative = alt,
      baseline = fmt(p1), effect = fmt(eff), es = fmt(h), pbar = "", alpha = fmt(a),
      target_power = fmt(pw), n_per_arm = fmt(nc), n_total_r = "", n_per_arm_exact = fmt(n),
      power_r = fmt(pwr.2p.test(h = h, n = nc, sig.level = a, alternative = pwr_alt[[alt]])$power),
      power_whitehead = "", power_whitehead_two_tail = "")
}
binary_power <- list(  # p1, effect, n per arm, alpha, alternative
  list(0.50, 0.10, 200, 0.05, "two-sided"),
  list(0.30, 0.20, 50, 0.05, "two-sided"),
  list(0.80, 0.10, 150, 0.01, "two-sided"),
  list(0.20, 0.05, 30, 0.10, "two-sided"),   # low power: the far tail counts (~0.016)
  list(0.50, 0.10, 100, 0.05, "larger"),
  list(0.50, -0.15, 80, 0.05, "smaller")
)
for (cs in binary_power) {
  p1 <- cs[[1]]; eff <- cs[[2]]; n <- cs[[3]]; a <- cs[[4]]; alt <- cs[[5]]
  h <- ES.h(p1 + eff, p1)
  add(kind = "binary", r_function = "pwr.2p.test", solve = "power", alternative = alt,
      baseline = fmt(p1), effect = fmt(eff), es = fmt(h), pbar = "", alpha = fmt(a),
      target_power = "", n_per_arm = fmt(n), n_total_r = "", n_per_arm_exact = "",
      power_r = fmt(pwr.2p.test(h = h, n = n, sig.level = a, alternative = pwr_alt[[alt]])$power),
      power_whitehead = "", power_whitehead_two_tail = "")
}

## continuous: pwr.t.test, type = "two.sample" -----------------------------------------
continuous_n <- list(  # d, alpha, power, alternative
  list(0.5, 0.05, 0.80, "two-sided"),
  list(0.2, 0.05, 0.80, "two-sided"),
  list(0.8, 0.01, 0.90, "two-sided"),
  list(0.5, 0.10, 0.95, "two-sided"),
  list(1.2, 0.05, 0.80, "two-sided"),
  list(2.0, 0.05, 0.80, "two-sided"),   # n ~ 5: t and normal approximations differ most
  list(0.3, 0.05, 0.80, "larger"),
  list(-0.4, 0.05, 0.90, "smaller")
)
for (cs in continuous_n) {
  d <- cs[[1]]; a <- cs[[2]]; pw <- cs[[3]]; alt <- cs[[4]]
  n <- pwr.t.test(d = d, sig.level = a, power = pw, type = "two.sample", alternative = pwr_alt[[alt]])$n
  nc <- ceiling(n)
  add(kind = "continuous", r_function = "pwr.t.test", solve = "n", alternative = alt,
      baseline = "", effect = fmt(d), es = fmt(d), pbar = "", alpha = fmt(a),
      target_power = fmt(pw), n_per_arm = fmt(nc), n_total_r = "", n_per_arm_exact = fmt(n),
      power_r = fmt(pwr.t.test(d = d, n = nc, sig.level = a, type = "two.sample", alternative = pwr_alt[[alt]])$power),
      power_whitehead = "", power_whitehead_two_tail = "")
}
continuous_power <- list(  # d, n per arm, alpha, alternative
  list(0.5, 30, 0.05, "two-sided"),
  list(0.8, 10, 0.01, "two-sided"),
  list(0.2, 15, 0.05, "two-sided"),
  list(1.0, 5, 0.05, "two-sided"),
  list(0.3, 100, 0.05, "larger"),
  list(-0.5, 20, 0.05, "smaller")
)
for (cs in continuous_power) {
  d <- cs[[1]]; n <- cs[[2]]; a <- cs[[3]]; alt <- cs[[4]]
  add(kind = "continuous", r_function = "pwr.t.test", solve = "power", alternative = alt,
      baseline = "", effect = fmt(d), es = fmt(d), pbar = "", alpha = fmt(a),
      target_power = "", n_per_arm = fmt(n), n_total_r = "", n_per_arm_exact = "",
      power_r = fmt(pwr.t.test(d = d, n = n, sig.level = a, type = "two.sample", alternative = pwr_alt[[alt]])$power),
      power_whitehead = "", power_whitehead_two_tail = "")
}

## ordinal: Hmisc posamsize / popower (Whitehead 1993), two-sided -------------------------
shift_po <- function(p0, or) {
  gamma <- cumsum(p0)[-length(p0)]                 # P(Y <= j), j = 1..K-1
  gamma1 <- plogis(qlogis(gamma) - log(or))        # OR > 1: mass moves to higher levels
  diff(c(0, gamma1, 1))
}
whitehead_power <- function(pbar, or, n_total, a, two_tail = FALSE) {
  v <- n_total * (1 - sum(pbar^3)) / 12
  z <- qnorm(1 - a / 2)
  pnorm(abs(log(or)) * sqrt(v) - z) + if (two_tail) pnorm(-abs(log(or)) * sqrt(v) - z) else 0
}
pA <- c(0.2, 0.3, 0.3, 0.2)
pB <- c(0.1, 0.2, 0.3, 0.4)
pC <- c(0.3, 0.4, 0.3)
pD <- c(0.1, 0.15, 0.25, 0.3, 0.2)
ordinal_n <- list(  # p0, OR, alpha, power
  list(pA, 2.0, 0.05, 0.80),
  list(pA, 0.5, 0.05, 0.80),
  list(pB, 1.5, 0.05, 0.90),
  list(pB, 3.0, 0.10, 0.95),
  list(pC, 2.5, 0.01, 0.80),
  list(pC, 1.3, 0.05, 0.80),
  list(pD, 1.8, 0.05, 0.80),
  list(pD, 0.6, 0.01, 0.90)
)
for (cs in ordinal_n) {
  p0 <- cs[[1]]; or <- cs[[2]]; a <- cs[[3]]; pw <- cs[[4]]
  pbar <- (p0 + shift_po(p0, or)) / 2
  ntot <- posamsize(pbar, odds.ratio = or, fraction = 0.5, alpha = a, power = pw)$n
  nc <- ceiling(ntot / 2)
  add(kind = "ordinal", r_function = "posamsize", solve = "n", alternative = "two-sided",
      baseline = join(p0), effect = fmt(or), es = fmt(log(or)), pbar = join(pbar), alpha = fmt(a),
      target_power = fmt(pw), n_per_arm = fmt(nc), n_total_r = fmt(ntot), n_per_arm_exact = fmt(ntot / 2),
      power_r = fmt(popower(pbar, odds.ratio = or, n = 2 * nc, alpha = a)$power),
      power_whitehead = fmt(whitehead_power(pbar, or, 2 * nc, a)),
      power_whitehead_two_tail = fmt(whitehead_power(pbar, or, 2 * nc, a, two_tail = TRUE)))
}
ordinal_power <- list(  # p0, OR, n per arm, alpha
  list(pA, 2.0, 50, 0.05),
  list(pA, 0.7, 150, 0.05),
  list(pB, 1.5, 100, 0.05),
  list(pC, 2.5, 30, 0.01),
  list(pC, 1.2, 200, 0.05),
  list(pD, 1.8, 80, 0.05)
)
for (cs in ordinal_power) {
  p0 <- cs[[1]]; or <- cs[[2]]; n <- cs[[3]]; a <- cs[[4]]
  pbar <- (p0 + shift_po(p0, or)) / 2
  add(kind = "ordinal", r_function = "popower", solve = "power", alternative = "two-sided",
      baseline = join(p0), effect = fmt(or), es = fmt(log(or)), pbar = join(pbar), alpha = fmt(a),
      target_power = "", n_per_arm = fmt(n), n_total_r = fmt(2 * n), n_per_arm_exact = "",
      power_r = fmt(popower(pbar, odds.ratio = or, n = 2 * n, alpha = a)$power),
      power_whitehead = fmt(whitehead_power(pbar, or, 2 * n, a)),
      power_whitehead_two_tail = fmt(whitehead_power(pbar, or, 2 * n, a, two_tail = TRUE)))
}

## write ----------------------------------------------------------------------------
tab <- do.call(rbind, lapply(rows, as.data.frame, stringsAsFactors = FALSE))
tab <- cbind(case = seq_len(nrow(tab)), tab)
con <- file(out_file, "w")
writeLines(c(
  sprintf("# generated by tests/reference/power_r.R with %s, pwr %s, Hmisc %s",
          R.version.string, packageVersion("pwr"), packageVersion("Hmisc")),
  "# columns are documented in tests/reference/power_r.R"
), con)
write.csv(tab, con, row.names = FALSE, quote = FALSE)
close(con)
cat(sprintf("wrote %d cases to %s\n", nrow(tab), out_file))
