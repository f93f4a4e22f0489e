#pragma once
// PMULAB_VERSION comes from `git describe` via the Makefile.
#ifndef PMULAB_VERSION
#define PMULAB_VERSION "unknown"
#endif
