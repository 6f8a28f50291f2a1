# Reference p-values for agentab.stats.ordinal_superiority's exact path.
# Exact conditional Wilcoxon-Mann-Whitney tests with ties (midranks) from the
# R package coin (Hothorn, Hornik, van de Wiel & Zeileis 2006, J. Stat.
# Software 8(8)), one-sided in both directions, for small 0-3 rubric samples.
# Regenerate: Rscript tests/reference/ordinal_exact_coin.R > tests/reference/ordinal_exact_coin.csv
suppressPackageStartupMessages(library(coin))
cases <- list(
  list(x = c(0, 1, 1, 2, 2), y = c(1, 2, 3, 3)),
  list(x = c(0, 0, 1, 1, 1, 2), y = c(1, 1, 2, 2, 3, 3)),
  list(x = c(2, 2, 2, 3), y = c(0, 1, 2, 2, 3)),
  list(x = c(0, 1, 2, 3, 3, 3), y = c(0, 0, 1, 2, 3)),
  list(x = c(1, 1, 1, 1, 2), y = c(1, 1, 2, 2, 2, 3, 3)),
  list(x = c(0, 0, 0, 1), y = c(0, 0, 1, 1))
)
cat("case,x,y,p_greater,p_less\n")
for (i in seq_along(cases)) {
  x <- cases[[i]]$x
  y <- cases[[i]]$y
  # Group "cand" listed first: alternative "greater" = the candidate's values tend to be larger.
  d <- data.frame(v = c(y, x), g = factor(c(rep("cand", length(y)), rep("base", length(x))), levels = c("cand", "base")))
  pg <- pvalue(wilcox_test(v ~ g, data = d, distribution = "exact", alternative = "greater"))
  pl <- pvalue(wilcox_test(v ~ g, data = d, distribution = "exact", alternative = "less"))
  cat(sprintf("%d,%s,%s,%.15g,%.15g\n", i, paste(x, collapse = " "), paste(y, collapse = " "), pg, pl))
}
