/*
 * The import of a planned module (docs/plan.md), part of the _plancode
 * extension (_plancode.c includes it once).  importlib's _find_and_load runs some
 * thirty Python functions per module (the lock manager, the parent, the
 * finders' loop, the spec's properties, module_from_spec and
 * _init_module_attrs, _load_unlocked): 127 thousand instructions for an
 * empty module answered by the plan, most of a planned module's cost when
 * its body is small.  fast_imports() puts find_and_load() below in its
 * place: for a name the plan's finder (the first of sys.meta_path) answers,
 * it does what those functions do, in C, with importlib's own module locks
 * (the same objects, so threads and the original path see each other), the
 * global import lock around the finder, the finder's own spec and loader,
 * and the same order of events: the parent is imported first, the module
 * is in sys.modules while its body runs and leaves it when the body fails,
 * moves to the end of sys.modules after, and is bound on its parent.
 * Everything else (a name already in sys.modules, a module the plan does
 * not answer, a loader of another kind, a parent that is not a package,
 * a meta path that changed) goes to importlib's functions as before.  Being
 * C, it adds no frame to a traceback: an exception from a body shows the
 * same frames as without the plan.  Known difference: a parent module that
 * refuses the child's attribute gets its ImportWarning from the caller's
 * line, not from importlib's (the warning filters see the caller).
 */
static struct {
	PyObject *orig; /* importlib's _find_and_load */
	PyObject *finder; /* the plan's PlanFinder */
	PyObject *rows; /* finder.rows: the names it may answer */
	PyObject *get_lock; /* _bootstrap._get_module_lock */
	PyObject *unlocked; /* _bootstrap._find_and_load_unlocked */
	PyObject *load_unlocked; /* _bootstrap._load_unlocked */
	PyObject *init_attrs; /* _bootstrap._init_module_attrs */
	PyObject *verbose; /* _bootstrap._verbose_message */
	PyObject *imp_acquire, *imp_release; /* _imp.acquire_lock / release_lock */
	PyObject *fast_types; /* tuple: loaders whose modules are made here */
	int unin; /* ModuleSpec has _uninitialized_submodules (3.11+) */
	int warn_setattr; /* a failed setattr on the parent warns (3.9+) */
	PyObject *s_path, *s_spec, *s_loader, *s_package, *s_file, *s_cached, *s_parent, *s_origin;
	PyObject *s_has_location, *s_search, *s_initializing, *s_unin, *s_create, *s_exec, *s_acquire;
	PyObject *s_release, *s_find_spec, *s_msg, *s_dot, *s_loader_attr, *s_cached_attr;
} F;

static PyObject *call1(PyObject *f, PyObject *a)
{
	return PyObject_CallFunctionObjArgs(f, a, NULL);
}

/* sys.modules when it is a dict (else NULL, no error: importlib's path). */
static PyObject *modules_dict(void)
{
	PyObject *m = PySys_GetObject("modules");

	return m && PyDict_Check(m) ? m : NULL;
}

static int first_finder_is_ours(void)
{
	PyObject *meta = PySys_GetObject("meta_path");

	return meta && PyList_Check(meta) && PyList_GET_SIZE(meta) > 0 && PyList_GET_ITEM(meta, 0) == F.finder;
}

/* The finder's spec, with the global import lock held as _find_spec
 * holds it around each finder. */
static PyObject *find_spec(PyObject *name, PyObject *path)
{
	PyObject *spec, *r = PyObject_CallObject(F.imp_acquire, NULL);

	if (!r)
		return NULL;
	Py_DECREF(r);
	spec = PyObject_CallMethodObjArgs(F.finder, F.s_find_spec, name, path, Py_None, NULL);
	if (spec) {
		r = PyObject_CallObject(F.imp_release, NULL);
		if (!r)
			Py_CLEAR(spec);
		Py_XDECREF(r);
	} else {
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		r = PyObject_CallObject(F.imp_release, NULL);
		Py_XDECREF(r);
		PyErr_Restore(t, v, tb);
	}
	return spec;
}

static int set_initializing(PyObject *spec, int on)
{
	return PyObject_SetAttr(spec, F.s_initializing, on ? Py_True : Py_False);
}

/* _init_module_attrs(spec, module) for a module just made by
 * PyModule_New: __name__ is set, __loader__, __package__ and __spec__ are
 * None, and there is no __path__, __file__ or __cached__ yet. */
static int init_new_module(PyObject *spec, PyObject *module)
{
	PyObject *d = PyModule_GetDict(module); /* borrowed */
	PyObject *v;
	int has;

	v = PyObject_GetAttr(spec, F.s_loader_attr);
	if (!v || PyDict_SetItem(d, F.s_loader, v) < 0)
		goto fail;
	Py_DECREF(v);
	v = PyObject_GetAttr(spec, F.s_parent);
	if (!v || PyDict_SetItem(d, F.s_package, v) < 0)
		goto fail;
	Py_DECREF(v);
	if (PyDict_SetItem(d, F.s_spec, spec) < 0)
		return -1;
	v = PyObject_GetAttr(spec, F.s_search);
	if (!v || (v != Py_None && PyDict_SetItem(d, F.s_path, v) < 0))
		goto fail;
	Py_DECREF(v);
	v = PyObject_GetAttr(spec, F.s_has_location);
	if (!v)
		return -1;
	has = PyObject_IsTrue(v);
	Py_DECREF(v);
	if (has < 0)
		return -1;
	if (has) {
		v = PyObject_GetAttr(spec, F.s_origin);
		if (!v || PyDict_SetItem(d, F.s_file, v) < 0)
			goto fail;
		Py_DECREF(v);
		v = PyObject_GetAttr(spec, F.s_cached_attr);
		if (!v || (v != Py_None && PyDict_SetItem(d, F.s_cached, v) < 0))
			goto fail;
		Py_DECREF(v);
	}
	return 0;
fail:
	Py_XDECREF(v);
	return -1;
}

/* spec._initializing = False on a failure, the pending exception kept. */
static void clear_initializing(PyObject *spec)
{
	PyObject *t, *v, *tb;

	PyErr_Fetch(&t, &v, &tb);
	if (set_initializing(spec, 0) < 0)
		PyErr_Clear();
	PyErr_Restore(t, v, tb);
}

/* _load_unlocked(spec) for a loader of F.fast_types. */
static PyObject *load_unlocked(PyObject *modules, PyObject *name, PyObject *spec, PyObject *loader)
{
	PyObject *module, *r, *moved;
	int verbose = 0;

	module = PyObject_CallMethodObjArgs(loader, F.s_create, spec, NULL);
	if (!module)
		return NULL;
	if (module == Py_None) {
		Py_DECREF(module);
		module = PyModule_NewObject(name);
		if (!module || init_new_module(spec, module) < 0)
			goto fail;
	} else {
		r = PyObject_CallFunctionObjArgs(F.init_attrs, spec, module, NULL);
		if (!r)
			goto fail;
		Py_DECREF(r);
	}
	/* Before sys.modules holds it: import.c's shortcut for a module in
	 * sys.modules looks at _initializing. */
	if (set_initializing(spec, 1) < 0)
		goto fail;
	if (PyDict_SetItem(modules, name, module) < 0)
		goto fail_initializing;
	r = PyObject_CallMethodObjArgs(loader, F.s_exec, module, NULL);
	if (!r) {
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		if (PyDict_DelItem(modules, name) < 0)
			PyErr_Clear(); /* KeyError: the body took itself out */
		PyErr_Restore(t, v, tb);
		goto fail_initializing;
	}
	Py_DECREF(r);
	/* The body may have put another object in its place: that one is
	 * the import's answer, moved to the end of sys.modules. */
	moved = PyDict_GetItemWithError(modules, name);
	if (!moved) {
		if (!PyErr_Occurred())
			PyErr_SetObject(PyExc_KeyError, name);
		goto fail_initializing;
	}
	Py_INCREF(moved);
	Py_SETREF(module, moved);
	if (PyDict_DelItem(modules, name) < 0 || PyDict_SetItem(modules, name, module) < 0)
		goto fail_initializing;
	{
		PyObject *flags = PySys_GetObject("flags");
		PyObject *v = flags ? PyObject_GetAttrString(flags, "verbose") : NULL;

		if (v) {
			verbose = PyObject_IsTrue(v);
			Py_DECREF(v);
		} else {
			PyErr_Clear();
		}
	}
	if (verbose > 0) {
		r = PyObject_CallFunctionObjArgs(F.verbose, F.s_msg, name, loader, NULL);
		if (!r)
			goto fail_initializing;
		Py_DECREF(r);
	}
	if (set_initializing(spec, 0) < 0)
		goto fail;
	return module;
fail_initializing:
	clear_initializing(spec);
fail:
	Py_XDECREF(module);
	return NULL;
}

/* _find_and_load_unlocked(name, import_) for a name the plan answers, with
 * the module's lock held. */
static PyObject *find_and_load_unlocked(PyObject *modules, PyObject *name, PyObject *import_)
{
	PyObject *parts = NULL, *parent = NULL, *child = NULL, *path = Py_None, *parent_module = NULL;
	PyObject *parent_spec = NULL, *unin = NULL, *spec = NULL, *loader = NULL, *module = NULL;
	int r;

	Py_INCREF(path);
	parts = PyUnicode_RPartition(name, F.s_dot);
	if (!parts)
		goto out;
	parent = PyTuple_GET_ITEM(parts, 0);
	child = PyTuple_GET_ITEM(parts, 2);
	if (PyUnicode_GET_LENGTH(parent) > 0) {
		if ((r = PyDict_Contains(modules, parent)) < 0)
			goto out;
		if (!r) {
			PyObject *x = call1(import_, parent);

			if (!x)
				goto out;
			Py_DECREF(x);
		}
		/* The parent's import may have imported this one. */
		module = PyDict_GetItemWithError(modules, name);
		if (module || PyErr_Occurred()) {
			Py_XINCREF(module);
			goto out;
		}
		parent_module = PyObject_GetItem(modules, parent);
		if (!parent_module)
			goto out;
		Py_SETREF(path, PyObject_GetAttr(parent_module, F.s_path));
		if (!path) {
			/* Not a package: importlib says so. */
			PyErr_Clear();
			Py_INCREF(Py_None);
			path = Py_None;
			module = PyObject_CallFunctionObjArgs(F.unlocked, name, import_, NULL);
			goto out;
		}
		if (F.unin) {
			parent_spec = PyObject_GetAttr(parent_module, F.s_spec);
			if (!parent_spec)
				goto out;
		}
	}
	if (!first_finder_is_ours())
		goto importlib;
	spec = find_spec(name, path);
	if (!spec)
		goto out;
	if (spec == Py_None)
		goto importlib;
	/* Found while the finder ran: importlib's _find_spec has its way. */
	if ((r = PyDict_Contains(modules, name)) != 0) {
		if (r < 0)
			goto out;
		goto importlib;
	}
	loader = PyObject_GetAttr(spec, F.s_loader_attr);
	if (!loader)
		goto out;
	if (parent_spec && parent_spec != Py_None) {
		unin = PyObject_GetAttr(parent_spec, F.s_unin);
		if (!unin)
			goto out;
		if (PyList_Check(unin)) {
			if (PyList_Append(unin, child) < 0)
				goto out;
		} else {
			Py_CLEAR(unin);
		}
	}
	r = PySequence_Contains(F.fast_types, (PyObject *)Py_TYPE(loader));
	if (r > 0)
		module = load_unlocked(modules, name, spec, loader);
	else if (r == 0)
		module = call1(F.load_unlocked, spec);
	if (unin) {
		PyObject *t, *v, *tb;
		Py_ssize_t n = PyList_GET_SIZE(unin);

		PyErr_Fetch(&t, &v, &tb);
		if (n > 0 && PyList_SetSlice(unin, n - 1, n, NULL) < 0)
			PyErr_Clear();
		PyErr_Restore(t, v, tb);
	}
	if (!module)
		goto out;
	if (PyUnicode_GET_LENGTH(parent) > 0) {
		PyObject *p = PyObject_GetItem(modules, parent);

		if (!p || PyObject_SetAttr(p, child, module) < 0) {
			if (p && F.warn_setattr && PyErr_ExceptionMatches(PyExc_AttributeError)) {
				PyErr_Clear();
				if (PyErr_WarnFormat(PyExc_ImportWarning, 1,
						     "Cannot set an attribute on %R for child module %R", parent,
						     child) < 0)
					Py_CLEAR(module);
			} else {
				Py_CLEAR(module);
			}
		}
		Py_XDECREF(p);
	}
	goto out;
importlib:
	module = PyObject_CallFunctionObjArgs(F.unlocked, name, import_, NULL);
out:
	Py_XDECREF(parts);
	Py_XDECREF(path);
	Py_XDECREF(parent_module);
	Py_XDECREF(parent_spec);
	Py_XDECREF(unin);
	Py_XDECREF(spec);
	Py_XDECREF(loader);
	return module;
}

static PyObject *pc_find_and_load(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	PyObject *name, *import_, *modules, *lock, *r, *module;
	int in;

	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "_find_and_load takes 2 arguments");
		return NULL;
	}
	name = args[0];
	import_ = args[1];
	modules = modules_dict();
	if (!modules || !PyUnicode_CheckExact(name) || !first_finder_is_ours())
		return PyObject_CallFunctionObjArgs(F.orig, name, import_, NULL);
	in = PyDict_Contains(F.rows, name);
	if (in == 1)
		in = !PyDict_Contains(modules, name);
	if (in != 1) {
		if (in < 0)
			return NULL;
		return PyObject_CallFunctionObjArgs(F.orig, name, import_, NULL);
	}
	/* _ModuleLockManager(name): importlib's lock for the name. */
	lock = call1(F.get_lock, name);
	if (!lock)
		return NULL;
	r = PyObject_CallMethodObjArgs(lock, F.s_acquire, NULL);
	if (!r) {
		Py_DECREF(lock);
		return NULL;
	}
	Py_DECREF(r);
	in = PyDict_Contains(modules, name);
	if (in == 0)
		module = find_and_load_unlocked(modules, name, import_);
	else
		module = NULL; /* loaded meanwhile (or an error): importlib's */
	{
		PyObject *t, *v, *tb;

		PyErr_Fetch(&t, &v, &tb);
		r = PyObject_CallMethodObjArgs(lock, F.s_release, NULL);
		Py_DECREF(lock);
		if (!r) {
			Py_CLEAR(module);
			if (v) {
				/* The release failed with the import's exception
				 * in flight: keep both, as a with statement does. */
				PyObject *t2, *v2, *tb2;

				PyErr_NormalizeException(&t, &v, &tb);
				PyErr_Fetch(&t2, &v2, &tb2);
				PyErr_NormalizeException(&t2, &v2, &tb2);
				PyException_SetContext(v2, v);
				Py_XDECREF(t);
				Py_XDECREF(tb);
				PyErr_Restore(t2, v2, tb2);
				return NULL;
			}
			return NULL;
		}
		Py_DECREF(r);
		PyErr_Restore(t, v, tb);
	}
	if (in != 0) {
		if (in < 0)
			return NULL;
		return PyObject_CallFunctionObjArgs(F.orig, name, import_, NULL);
	}
	return module;
}

static PyMethodDef find_and_load_def = { "_find_and_load", (PyCFunction)(void (*)(void))pc_find_and_load, METH_FASTCALL,
					 "Find and load the module (coldstart's plan: python/coldstart/_plancode.c)." };

PyDoc_STRVAR(fast_imports_doc, "fast_imports(finder, bootstrap, imp, loader_types) -> bool\n\n"
			       "Puts this module's _find_and_load in place of importlib's in bootstrap\n"
			       "(importlib._bootstrap) for the names finder answers; False when it\n"
			       "already did.");

static PyObject *intern_all(void)
{
	static const char *const names[] = { "__path__",
					     "__spec__",
					     "__loader__",
					     "__package__",
					     "__file__",
					     "__cached__",
					     "parent",
					     "origin",
					     "has_location",
					     "submodule_search_locations",
					     "_initializing",
					     "_uninitialized_submodules",
					     "create_module",
					     "exec_module",
					     "acquire",
					     "release",
					     "find_spec",
					     "import {!r} # {!r}",
					     ".",
					     "loader",
					     "cached" };
	PyObject **slots[] = { &F.s_path,	  &F.s_spec,	  &F.s_loader, &F.s_package,	  &F.s_file,
			       &F.s_cached,	  &F.s_parent,	  &F.s_origin, &F.s_has_location, &F.s_search,
			       &F.s_initializing, &F.s_unin,	  &F.s_create, &F.s_exec,	  &F.s_acquire,
			       &F.s_release,	  &F.s_find_spec, &F.s_msg,    &F.s_dot,	  &F.s_loader_attr,
			       &F.s_cached_attr };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!*slots[i] && !(*slots[i] = PyUnicode_InternFromString(names[i])))
			return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *pc_fast_imports(PyObject *self, PyObject *args)
{
	PyObject *finder, *bootstrap, *imp, *types, *fn = NULL, *spec = NULL, *r;

	if (!PyArg_ParseTuple(args, "OOOO!", &finder, &bootstrap, &imp, &PyTuple_Type, &types))
		return NULL;
	if (F.orig)
		Py_RETURN_FALSE;
	if (!(r = intern_all()))
		return NULL;
	Py_DECREF(r);
#define GET(dst, obj, attr)                                                                                            \
	do {                                                                                                           \
		if (!((dst) = PyObject_GetAttrString((obj), (attr))))                                                  \
			goto fail;                                                                                     \
	} while (0)
	GET(F.orig, bootstrap, "_find_and_load");
	GET(F.rows, finder, "rows");
	GET(F.get_lock, bootstrap, "_get_module_lock");
	GET(F.unlocked, bootstrap, "_find_and_load_unlocked");
	GET(F.load_unlocked, bootstrap, "_load_unlocked");
	GET(F.init_attrs, bootstrap, "_init_module_attrs");
	GET(F.verbose, bootstrap, "_verbose_message");
	GET(F.imp_acquire, imp, "acquire_lock");
	GET(F.imp_release, imp, "release_lock");
#undef GET
	if (!PyDict_Check(F.rows)) {
		PyErr_SetString(PyExc_TypeError, "finder.rows is not a dict");
		goto fail;
	}
	/* What this interpreter's importlib does that older ones did not. */
	{
		PyObject *ms = PyObject_GetAttrString(bootstrap, "ModuleSpec");

		spec = ms ? PyObject_CallFunction(ms, "sO", "x", Py_None) : NULL;
		Py_XDECREF(ms);
		if (!spec)
			goto fail;
		F.unin = PyObject_HasAttr(spec, F.s_unin);
		Py_CLEAR(spec);
	}
	F.warn_setattr = PY_VERSION_HEX >= 0x03090000;
	Py_INCREF(finder);
	F.finder = finder;
	Py_INCREF(types);
	F.fast_types = types;
	fn = PyCFunction_New(&find_and_load_def, NULL);
	if (!fn || PyObject_SetAttrString(bootstrap, "_find_and_load", fn) < 0)
		goto fail;
	Py_DECREF(fn);
	Py_RETURN_TRUE;
fail:
	Py_XDECREF(fn);
	Py_XDECREF(spec);
	Py_CLEAR(F.orig);
	Py_CLEAR(F.rows);
	Py_CLEAR(F.get_lock);
	Py_CLEAR(F.unlocked);
	Py_CLEAR(F.load_unlocked);
	Py_CLEAR(F.init_attrs);
	Py_CLEAR(F.verbose);
	Py_CLEAR(F.imp_acquire);
	Py_CLEAR(F.imp_release);
	Py_CLEAR(F.finder);
	Py_CLEAR(F.fast_types);
	return NULL;
}
