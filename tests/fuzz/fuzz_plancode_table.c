// corpus: tests/fixtures/plancode
// python: embed
/*
 * libFuzzer target for the C reader of plan data: the string table of a
 * plan's code archive as python/coldstart/_plancode.c reads it (table_load:
 * marshal data, every key and row checked) and answers calls from it
 * (lookup).  The applier checks each part's CRC-32 before handing it over;
 * this target skips that, so every input reaches the reader.  Built against
 * Debian's libpython (tests/fuzz/run.sh, "python: embed").
 */
#include "../../python/coldstart/_plancode.c"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	Py_InitializeEx(0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PyObject *table, *key, *rows, *fn, *mode;
	Py_ssize_t pos = 0;

	table = table_load((const char *)data, (Py_ssize_t)size);
	if (!table) {
		PyErr_Clear();
		return 0;
	}
	/* Ask for every source with the first row's file name and mode, and a
	 * few flag values, as compile() would. */
	S.table = table;
	while (PyDict_Next(table, &pos, &key, &rows)) {
		PyObject *code;

		if (!PyTuple_GET_SIZE(rows))
			continue;
		fn = PyTuple_GET_ITEM(PyTuple_GET_ITEM(rows, 0), 0);
		mode = PyTuple_GET_ITEM(PyTuple_GET_ITEM(rows, 0), 1);
		for (long flags = 0; flags < 2; flags++) {
			code = lookup(key, fn, mode, flags, -1);
			Py_XDECREF(code);
		}
	}
	S.table = NULL;
	Py_DECREF(table);
	if (PyErr_Occurred())
		PyErr_Clear();
	return 0;
}
