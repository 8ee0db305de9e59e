-- Latency histograms (docs/api/admin-api.md §6, dashboard M13; migration 0010).

-- Sums histograms element-wise: p_hists is a two-dimensional array, one histogram per row (as
-- array_agg of equally long arrays builds it). Unnest walks it row by row, so element k is
-- bucket (k - 1) mod width. A plain function rather than an aggregate: the function installer
-- drops and re-creates functions only. NULL (no rows) answers NULL.
CREATE OR REPLACE FUNCTION qg_hist_sum(p_hists bigint[])
RETURNS bigint[] LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg(t.s ORDER BY t.c)
    FROM (SELECT (u.k - 1) % array_length(p_hists, array_ndims(p_hists)) AS c, sum(u.v)::bigint AS s
          FROM unnest(p_hists) WITH ORDINALITY AS u (v, k)
          GROUP BY 1) t
$$;
