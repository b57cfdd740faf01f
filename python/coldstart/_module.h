/*
 * The module a coldstart extension (_tracer.c, _sampler.c) makes of its
 * method table: FORMAT_VERSION says which record format its files carry,
 * IMPL (when given) which writer it is.  Each includes it once, after
 * Python.h, and calls it from its PyInit function.
 */

/* The module of def with its constants; NULL with the exception set. */
static PyObject *ext_module_create(struct PyModuleDef *def, long format_version, const char *impl)
{
	PyObject *m = PyModule_Create(def);

	if (m && (PyModule_AddIntConstant(m, "FORMAT_VERSION", format_version) < 0 ||
		  (impl && PyModule_AddStringConstant(m, "IMPL", impl) < 0))) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
