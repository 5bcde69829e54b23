(ns testapp.shared
  "The nginx.jvm.shared wrapper, exercised in a worker; answers EDN."
  (:require [nginx.jvm.shared :as shared]))

(defonce last-got (atom nil))

(defn received [_]
  {:status 200 :headers {"Content-Type" "application/edn"}
   :body (pr-str (some-> @last-got deref))})

(defn handler [_]
  (let [d (shared/dict "d")
        _ (shared/clear! d)
        ;; one step after another: a map literal's values are evaluated in
        ;; no set order
        steps [[:put #(shared/put! d "a" "1")]
               [:put-kw #(shared/put! d :b/c "kw")]
               [:put-int #(shared/put! d "n" (int 5))]
               [:put-bytes #(shared/put! d "bytes" (.getBytes "xyz" "UTF-8"))]
               [:add #(shared/add! d "a" "2")]
               [:replace #(shared/replace! d "a" "3")]
               [:get #(get d "a")]
               [:get-kw #(d :b/c)]
               [:lookup-kw #(:a d)]
               [:not-found #(get d "zz" :none)]
               [:bytes #(String. ^bytes (get d "bytes") "UTF-8")]
               [:incr #(shared/incr! d "n")]
               [:incr-by #(shared/incr! d "m" 10 {:init 100 :ttl 60000})]
               [:entry #(deref (shared/entry d "m"))]
               [:count #(count d)]
               [:keys #(sort (shared/keys d 10))]
               [:delete #(shared/delete! d "a")]
               [:after-delete #(get d "a")]
               [:capacity #(shared/capacity d)]
               [:printed #(pr-str d)]
               [:bad-type #(try (shared/put! d "x" 1.5)
                                (catch IllegalArgumentException _ :iae))]
               [:unknown #(try (shared/dict "nope")
                               (catch IllegalArgumentException _ :iae))]]
        results (reduce (fn [m [k f]] (assoc m k (f))) {} steps)
        t (shared/topic "t")
        got (atom [])
        sub (shared/subscribe! t #(swap! got conj %))
        results (assoc results
                       :publish (shared/publish! t "one")
                       :publish-bad (try (shared/publish! t 1)
                                         (catch IllegalArgumentException _ :iae)))]
    ;; delivered on this worker's event loop, after this handler returns
    (future (Thread/sleep 2000) (sub))
    (reset! last-got got)
    {:status 200
     :headers {"Content-Type" "application/edn"}
     :body (pr-str results)}))

(defn lists
  "The list, expiry and stale functions of nginx.jvm.shared, step by step;
  answers EDN."
  [_]
  (let [d (shared/dict "d")
        _ (shared/clear! d)
        steps [[:lpush #(shared/lpush! d "l" "b")]
               [:lpush-kw #(shared/lpush! d :l "a")]
               [:rpush-int #(shared/rpush! d "l" (int 3))]
               [:rpush-bytes #(shared/rpush! d "l" (.getBytes "xyz" "UTF-8"))]
               [:llen #(shared/llen d "l")]
               [:llen-absent #(shared/llen d "none")]
               [:lpop #(shared/lpop! d "l")]
               [:rpop-bytes #(String. ^bytes (shared/rpop! d "l") "UTF-8")]
               [:rpop-int #(shared/rpop! d :l)]
               [:lpop-last #(shared/lpop! d "l")]
               [:lpop-empty #(shared/lpop! d "l")]
               [:ttl-absent #(shared/ttl d "l")]
               [:put #(shared/put! d "v" "value" {:ttl 60000})]
               [:ttl-put #(< 59000 (shared/ttl d "v") 60001)]
               [:expire #(shared/expire! d "v" 0)]
               [:ttl-never #(shared/ttl d "v")]
               [:expire-absent #(shared/expire! d "none" 1000)]
               [:stale-fresh #(shared/get-stale d "v")]
               [:stale-absent #(shared/get-stale d "none")]
               [:expire-short #(shared/expire! d "v" 1)]
               [:stale #(do (Thread/sleep 20) (shared/get-stale d "v"))]
               [:get-expired #(get d "v")]
               [:flush #(shared/flush-expired! d)]
               [:flush-again #(shared/flush-expired! d 10)]
               [:not-list #(try (shared/lpush! d "s" "x")
                                (shared/put! d "s" "x")
                                (shared/lpush! d "s" "y")
                                (catch IllegalArgumentException e (.getMessage e)))]
               [:is-list #(try (shared/rpush! d "l2" "x")
                               (get d "l2")
                               (catch IllegalArgumentException e (.getMessage e)))]]
        results (reduce (fn [m [k f]] (assoc m k (f))) {} steps)]
    {:status 200
     :headers {"Content-Type" "application/edn"}
     :body (pr-str results)}))

(defn incr-limits
  "incr! at the ends of a long, step by step: each overflow is the
  exception's class and message, and the value after it; answers EDN."
  [_]
  (let [d (shared/dict "d")
        _ (shared/clear! d)
        thrown (fn [f] (try (f) (catch ArithmeticException e
                                  [(.getSimpleName (class e)) (.getMessage e)])))
        steps [[:to-max #(shared/incr! d "c" Long/MAX_VALUE)]
               [:past-max #(thrown (fn [] (shared/incr! d "c")))]
               [:after-max #(get d "c")]
               [:back #(shared/incr! d "c" -1)]
               [:init-past-min #(thrown (fn [] (shared/incr! d "m" -1 {:init Long/MIN_VALUE})))]
               [:absent #(get d "m" :absent)]
               [:to-min #(shared/incr! d "m" Long/MIN_VALUE)]
               [:past-min #(thrown (fn [] (shared/incr! d "m" -1)))]
               [:after-min #(get d "m")]]]
    {:status 200
     :headers {"Content-Type" "application/edn"}
     :body (pr-str (reduce (fn [m [k f]] (assoc m k (f))) {} steps))}))
