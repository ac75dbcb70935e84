"""ref_blas.py - re-executes a reference-data script with Debian's reference BLAS.

The reference outputs depend (at the 1e-6 level) on the BLAS behind torch, so the
scripts of models/tv/ call use_reference_blas(__file__) before importing numpy or torch:
it re-executes the script with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas (package
libblas3) whichever libblas.so.3 alternative is selected, once (OQC_REF_BLAS=1 marks
the re-executed process).  Without libblas3 it does nothing.
"""
import os
import sys

REF_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"


def use_reference_blas(script):
    if os.path.exists(os.path.join(REF_BLAS_DIR, "libblas.so.3")) and os.environ.get("OQC_REF_BLAS") != "1":
        old = os.environ.get("LD_LIBRARY_PATH")
        env = dict(os.environ, OQC_REF_BLAS="1",
                   LD_LIBRARY_PATH=REF_BLAS_DIR + (":" + old if old else ""))
        os.execve(sys.executable, [sys.executable, os.path.abspath(script)] + sys.argv[1:], env)
