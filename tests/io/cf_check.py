"""CF compliance of a netCDF file, checked by an independent tool: the IOOS compliance-checker
(CF 1.8 suite, strict criteria: warnings fail too). It ships the CF standard-name table, so it
runs offline; scripts/setup installs it."""
import os
import tempfile


def cf_problems(path):
    """The checker's report for `path` when it finds anything at the strict level, else ''."""
    from compliance_checker.runner import CheckSuite, ComplianceChecker

    CheckSuite.load_all_available_checkers()
    fd, report = tempfile.mkstemp(suffix=".txt")
    os.close(fd)
    try:
        ok, errors = ComplianceChecker.run_checker(str(path), ["cf:1.8"], 0, "strict",
                                                   output_filename=report, output_format="text")
        with open(report) as f:
            text = f.read()
    finally:
        os.remove(report)
    return "" if ok and not errors else text
