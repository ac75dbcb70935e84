/* usage.h - oqc's help texts (usage.c), for the CLI driver (main.c, cli_opts.c). */
#ifndef OQC_USAGE_H
#define OQC_USAGE_H

/* The general text: commands and common options. */
extern const char *const oqc_usage_text;
/* The usage of command cmd ("dump", "compile", ...), or NULL for an unknown one. */
const char *oqc_usage(const char *cmd);

#endif
