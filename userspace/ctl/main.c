/*
 * main.c - mysteerctl's entry point; everything else is in ctl.c so that the
 * unit tests link it without a main().
 */
#include "ctl/ctl.h"

int main(int argc, char **argv)
{
	return ctl_main(argc, argv);
}
