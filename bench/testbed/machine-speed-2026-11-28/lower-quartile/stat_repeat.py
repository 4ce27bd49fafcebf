import json,glob,statistics as st,sys,itertools
def entries(run):
    d={}
    for f in glob.glob(f'{run}/rounds/*/gpt2-tiny-six/*.json'):
        j=json.load(open(f)); cls=j['source']['device_type']
        for mbs in ('1','2','4'):
            for tp in j.get(mbs,{}):
                e=j[mbs][tp]['1']; d.setdefault((cls,mbs,tp),[]).append(e[0]+e[1])
    return d
runs=sys.argv[1:]
E={r:entries(r) for r in runs}
stats={'median':st.median,'2nd fastest':lambda v:sorted(v)[1],'fastest':min,'lower quartile':lambda v:st.quantiles(v,n=4)[0],'mean of fastest 3':lambda v:st.fmean(sorted(v)[:3])}
for name,f in stats.items():
    diffs=[]
    for a,b in itertools.combinations(runs,2):
        for k in E[a]:
            if k in E[b] and len(E[a][k])>=3 and len(E[b][k])>=3:
                diffs.append(abs(f(E[a][k])/f(E[b][k])-1)*100)
    print('%-18s pairs %d: median %.1f %%, p75 %.1f %%, max %.1f %%'%(name,len(diffs),st.median(diffs),st.quantiles(diffs,n=4)[2],max(diffs)))
