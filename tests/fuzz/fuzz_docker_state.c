// corpus: tests/fixtures/docker
/*
 * libFuzzer target for the parser of the container's end state (the line
 * `inspect --format DOCKER_STATE_FORMAT` prints) and of RFC 3339 times: any
 * input gives a state or an error message, and a state's fields are what
 * the line said (exit code -1..255, times not before 1970).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sys/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct docker_state st;
	struct buf err = BUF_INIT;
	int64_t ns;

	if (docker_state_parse(&st, text, &err) == 0) {
		if (st.exit_code < -1 || st.exit_code > 255 || !st.status || st.started_ns < 0 || st.finished_ns < 0 ||
		    st.started != (st.started_ns > 0) || (st.error && !*st.error))
			abort();
	} else if (!err.len) {
		abort();
	}
	docker_state_release(&st);
	if (docker_parse_time(text, &ns) == 0 && ns < 0)
		abort();
	free(text);
	buf_release(&err);
	return 0;
}
