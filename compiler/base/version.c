/* version.c - the version string, defined by the Makefile (VERSION). */
#include "base.h"

const char *oqc_version(void) { return OQC_VERSION; }
