"""Vendor hardware certification: suites run under enforced rules, judged by named checks,
packed into a signed bundle that anyone can verify from its contents alone."""
